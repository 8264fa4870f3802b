"""The kit's types for ``st.from_type``, registered through hypothesis' own entry point.

``pyproject.toml`` names ``_hypothesis_setup_hook`` under ``[project.entry-points.hypothesis]``,
so hypothesis calls it when it is imported, with or without pytest. It imports nothing of
the model: if ``sim.kit.testing`` (``World``, ``App``) is loaded already, the strategies are
registered at once; else a one-shot import hook registers them right after that module
runs. A suite, a script or a notebook that never touches the kit pays nothing for it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = ["_hypothesis_setup_hook", "install", "register"]

_TESTING = "platform_testbed.sim.kit.testing"


def register() -> None:
    """``st.from_type(World)`` draws ``worlds()``, ``st.from_type(App)`` draws ``apps()``.

    Registered as functions hypothesis calls when it first resolves the type, so the
    strategies module loads then, not here (here may be in the middle of its own import).
    """
    from hypothesis import strategies as st  # noqa: PLC0415 -- only once the kit is used

    from platform_testbed.sim.kit.testing import App, World  # noqa: PLC0415

    st.register_type_strategy(World, _kit("worlds"))
    st.register_type_strategy(App, _kit("apps"))


def _kit(name: str) -> Callable[[type], SearchStrategy[Any]]:
    def strategy(kind: type) -> SearchStrategy[Any]:
        from platform_testbed.sim.kit import strategies  # noqa: PLC0415 -- at first use

        made: SearchStrategy[Any] = getattr(strategies, name)()
        return made

    return strategy


class _AfterTesting(importlib.abc.MetaPathFinder):
    """Finds nothing itself: it wraps the real loader of the kit's types so that the
    strategies are registered as soon as that module has run, then steps aside."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != _TESTING:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _ThenRegister(spec.loader)
                return spec
        return None


class _ThenRegister(importlib.abc.Loader):
    """The module's own loader (shared, maybe: pytest's rewriting hook loads many), asked
    for everything, and ``register`` once the module has run."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        register()

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ... for tracebacks
        return getattr(self.loader, name)


def install() -> None:
    """Register now if the kit's types are loaded, else right after they load (once)."""
    if _TESTING in sys.modules:
        register()
    elif not any(isinstance(f, _AfterTesting) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterTesting())


def _hypothesis_setup_hook() -> None:
    """Hypothesis' entry point (group ``hypothesis``): called as hypothesis finishes importing."""
    install()
