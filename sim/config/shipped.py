"""Where the shipped settings files are, and their names: standard library only.

The command line's parser and a shell's Tab list these names (``testbed compare sept<TAB>``)
without loading the models that read the files (pydantic), so they live apart from
``sim.config.scenario`` and ``sim.rollout.config``, which re-export them.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


def scenarios_dir() -> Path:
    """Where the shipped scenarios live (``TESTBED_SCENARIOS`` overrides)."""
    override = os.environ.get("TESTBED_SCENARIOS")
    if override:
        return Path(override)
    try:
        # Installed (wheel or editable): pyproject.toml maps scenarios/ onto this package.
        return Path(str(resources.files("platform_testbed.scenarios")))
    except ModuleNotFoundError:
        # A source checkout run without installing it (``python -m platform_testbed`` at the top).
        return Path(__file__).resolve().parent.parent / "scenarios"


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


def _tomls(folder: Path) -> dict[str, Path]:
    return {p.stem: p for p in sorted(folder.glob("*.toml"))}
