"""Where the shipped settings files are, and their names: standard library only.

The command line's parser and a shell's Tab list these names (``testbed compare sept<TAB>``)
without loading the models that read the files (pydantic), so they live apart from
``sim.config.scenario`` and ``sim.rollout.config``, which re-export them.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import TypeVar, overload

from platform_testbed.sim.config.options import option

_T = TypeVar("_T")


def scenarios_dir() -> Path:
    """Where the shipped scenarios live (``TESTBED_SCENARIOS`` overrides)."""
    override = option("scenarios").from_env(os.environ)
    if override:
        return Path(override)
    try:
        # Installed (wheel or editable): pyproject.toml maps scenarios/ onto this package.
        return Path(str(resources.files("platform_testbed.scenarios")))
    except ModuleNotFoundError:
        # A source checkout run without installing it (``python -m platform_testbed`` at the top).
        return Path(__file__).resolve().parent.parent / "scenarios"


class ShippedNames(dict[str, Path]):
    """Shipped files by name, where ``-`` and ``_`` in a name are the same letter.

    The names list with hyphens, as the scenarios always did (``sept25-unknowns``); a sweep
    file's stem and older commands spell them with underscores (``sept25_unknowns``), and
    both find the same file, so neither a user's muscle memory nor a README goes stale.
    """

    @staticmethod
    def spelled(name: str) -> str:
        """The listed spelling of a name: underscores as hyphens."""
        return name.replace("_", "-")

    def __missing__(self, name: str) -> Path:
        spelled = self.spelled(name)
        if spelled == name:
            raise KeyError(name)
        return self[spelled]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(self.spelled(name))

    @overload
    def get(self, name: str, default: None = None, /) -> Path | None: ...
    @overload
    def get(self, name: str, default: Path, /) -> Path: ...
    @overload
    def get(self, name: str, default: _T, /) -> Path | _T: ...
    def get(self, name: str, default: object = None, /) -> object:
        """The file ``name`` means in either spelling, else ``default``."""
        return super().get(self.spelled(name), default)


def shipped() -> dict[str, Path]:
    """The shipped scenarios by name, sorted."""
    return _tomls(scenarios_dir())


def shipped_sweeps() -> dict[str, Path]:
    """The shipped sweep files by name (``scenarios/sweeps/``), sorted."""
    return _tomls(scenarios_dir() / "sweeps")


def shipped_series() -> dict[str, Path]:
    """The shipped series files by name (``scenarios/series/``), sorted."""
    return _tomls(scenarios_dir() / "series")


def shipped_rollouts() -> dict[str, Path]:
    """The shipped rollout scenarios by name (``scenarios/rollouts/``), sorted."""
    return _tomls(scenarios_dir() / "rollouts")


def _tomls(folder: Path) -> ShippedNames:
    return ShippedNames((ShippedNames.spelled(p.stem), p) for p in sorted(folder.glob("*.toml")))
