"""The testbed's pytest plugin: fixtures that lay out a world and drive a check, guarantees as tests.

Installed with the package (a ``pytest11`` entry point), so a user's own test suite gets it by
having the testbed installed; ``-p no:testbed`` turns it off. It gives:

- ``testbed_world``: ``sim.kit.testing.world`` (``testbed_world(App(cap=1), horizon_s=60)``);
- ``drive_check``: ``drive_check(check, world)`` runs the check through the world as the
  simulator would and returns the ``Run`` (its looks and verdict);
- ``check_guarantee``: ``check_guarantee(check, never_misses, worlds=worlds(cap=5))``, the kit's
  ``assert_guarantee`` with this run's ``--testbed-examples`` and ``--testbed-seed``;
- ``guarantee_test(check, guarantee, ...)``: one line at a module's top level that *is* a test
  (``test_never_misses = guarantee_test(MyCheck(), never_misses)``);
- with hypothesis' own entry point (not this plugin: ``sim.kit.hypothesis_hook``), strategies
  for the world types, so ``st.from_type(World)`` and ``@given(w=...)`` with ``World`` or
  ``App`` hints draw ``worlds()`` and ``apps()``, with or without pytest.

Nothing of the model loads until a fixture, a guarantee or a strategy is used: a suite
that has the testbed installed and never uses it pays only for this module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import pytest

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from platform_testbed.checks import Check
    from platform_testbed.sim.kit.testing import Run, World

#: ``--testbed-seed``'s default: the kit's own (the same search every run).
DEFAULT_SEED = 0


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--testbed-examples N`` and ``--testbed-seed K`` for every guarantee the run checks."""
    group = parser.getgroup("testbed", "platform-simulator-testbed guarantees")
    group.addoption("--testbed-examples", type=int, default=None, metavar="N",
                    help="worlds each guarantee tries (default: the hypothesis profile's)")
    group.addoption("--testbed-seed", type=int, default=DEFAULT_SEED, metavar="K",
                    help=f"the guarantees' search seed (default {DEFAULT_SEED}; -1: hypothesis "
                    "draws one and keeps failures in its database)")


def pytest_configure(config: pytest.Config) -> None:
    """Validate the options; nothing of the model loads until a fixture or strategy is used.

    ``st.from_type(World)`` needs no plugin: hypothesis' own entry point registers the kit's
    strategies (``sim.kit.hypothesis_hook``), with or without pytest.
    """
    examples = config.getoption("--testbed-examples")
    if examples is not None and examples < 1:
        raise pytest.UsageError(f"--testbed-examples: must be 1 or more (got {examples})")
    # The same one-shot hook, for an install whose metadata predates the entry point.
    from platform_testbed.sim.kit.hypothesis_hook import install  # noqa: PLC0415 -- imports no model

    install()


def register_strategies() -> None:
    """``st.from_type(World)`` draws ``worlds()``, ``st.from_type(App)`` draws ``apps()``
    (hypothesis' entry point does it already; kept for code that calls it)."""
    from platform_testbed.sim.kit.hypothesis_hook import register  # noqa: PLC0415 -- the model, now

    register()


def _search(config: pytest.Config) -> dict[str, Any]:
    # The defaults too: with the plugin off (pytest -p no:testbed) a guarantee_test still
    # runs, with the kit's search, where getoption alone raised "no option named".
    seed = config.getoption("--testbed-seed", default=DEFAULT_SEED)
    return {"max_examples": config.getoption("--testbed-examples", default=None),
            "seed": None if seed == -1 else seed}


@pytest.fixture
def testbed_world() -> Callable[..., World]:
    """``sim.kit.testing.world``: one machine per ``App``, laid out to ``horizon_s``."""
    from platform_testbed.sim.kit.testing import world  # noqa: PLC0415

    return world


@pytest.fixture
def drive_check() -> Callable[..., Run]:
    """``drive_check(check, world, max_looks=2000)``: the check's ``Run`` in that world."""
    from platform_testbed.sim.kit.testing import drive_world  # noqa: PLC0415

    return drive_world


@pytest.fixture
def check_guarantee(request: pytest.FixtureRequest) -> Callable[..., None]:
    """``check_guarantee(check, guarantee, worlds=None)``: raise for the smallest world breaking it."""
    from platform_testbed.sim.kit.strategies import assert_guarantee  # noqa: PLC0415

    search = _search(request.config)

    def check(check: Check, guarantee: Callable[[World, Run], object], *,
              worlds: SearchStrategy[World] | None = None) -> None:
        assert_guarantee(check, guarantee, worlds=worlds, **search)

    return check


def guarantee_test(
    check: Check | Callable[[], Check],
    guarantee: Callable[[World, Run], object],
    *,
    worlds: SearchStrategy[World] | Callable[[], SearchStrategy[World]] | None = None,
) -> Callable[[pytest.FixtureRequest], None]:
    """A test function stating that ``check`` keeps ``guarantee`` in every world of ``worlds``.

    Assign it to a ``test_`` name at a module's top level. ``check`` (and ``worlds``) may be
    given as a callable making it, so nothing runs at import; the test's docstring is the
    guarantee's, so ``pytest -v`` and a failure say what was promised.
    """

    def test(request: pytest.FixtureRequest) -> None:
        from platform_testbed.sim.kit.strategies import assert_guarantee  # noqa: PLC0415

        # A class (its ``next`` is unbound) or a factory makes the check; an object is one.
        makes = isinstance(check, type) or (callable(check) and not hasattr(check, "next"))
        made = cast("Callable[[], Check]", check)() if makes else cast("Check", check)
        drawn = worlds() if callable(worlds) else worlds
        assert_guarantee(made, guarantee, worlds=drawn, **_search(request.config))

    said = (getattr(guarantee, "__doc__", None) or "").strip().splitlines()
    test.__doc__ = f"The check keeps its guarantee: {said[0]}" if said else "The check keeps its guarantee."
    return test


__all__ = ["check_guarantee", "drive_check", "guarantee_test", "register_strategies", "testbed_world"]

