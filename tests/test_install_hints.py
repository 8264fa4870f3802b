"""A missing optional library is one line naming the library and a pip command that works
from a wheel or a checkout: the testbed is not on PyPI, so no hint names its extras there."""

from __future__ import annotations

import importlib.abc
import sys
import tomllib
from pathlib import Path

import pytest

from platform_testbed.sim import api
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config.settings import BadInput
from platform_testbed.sim.runtime import installs, scheduler

ROOT = Path(__file__).resolve().parent.parent


def test_each_hint_installs_its_extras_requirement():
    """The command names the requirement the extra declares, range included."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra, hint in (("plot", installs.PLOT), ("pandas", installs.PANDAS),
                        ("dask", installs.DASK)):
        assert extras[extra] == [hint.removeprefix("pip install '").removesuffix("'")], extra


class _NoMatplotlib(importlib.abc.MetaPathFinder):
    """Finds no matplotlib, as where it is not installed."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] == "matplotlib":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def test_without_matplotlib_timeline_and_heatmap_say_what_to_install(tmp_path, capsys, monkeypatch):
    """Exit 2 and one line naming matplotlib and its pip command, from the CLI and sim.api."""
    # What an install without it does: no matplotlib to find, nor the testbed's modules that
    # import it loaded yet.
    for module in [m for m in sys.modules if m.partition(".")[0] == "matplotlib"
                   or m.startswith(("platform_testbed.sim.show.plot",
                                    "platform_testbed.sim.sweep.heatmap"))]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setattr(sys, "meta_path", [_NoMatplotlib(), *sys.meta_path])
    missing = "(No module named 'matplotlib')"
    assert main(["compare", "sept25-crash-loop", "--check", "count", "--runs", "1",
                 "--timeline", str(tmp_path / "t.png")]) == 2
    assert capsys.readouterr().err == (
        f"testbed: --timeline needs matplotlib {missing}: pip install 'matplotlib>=3.8'\n")
    assert main(["sweep", "crash-period-vs-look-delay", "--out", str(tmp_path / "s.csv"),
                 "--heatmap", str(tmp_path / "s.png"), "--no-progress"]) == 2
    assert capsys.readouterr().err == (
        f"testbed: --heatmap needs matplotlib {missing}: pip install 'matplotlib>=3.8'\n")
    with pytest.raises(BadInput) as raised:
        api.timeline("sept25-crash-loop", "count")
    assert str(raised.value) == "timeline: needs matplotlib: pip install 'matplotlib>=3.8'"


def test_without_dask_distributed_sweep_dask_says_what_to_install(monkeypatch):
    """A --dask with no distributed installed is one line naming it and its pip command."""
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(BadInput) as raised:
        scheduler.connect_client("tcp://127.0.0.1:1")
    assert str(raised.value) == (
        "--dask: Dask distributed is not installed (pip install 'distributed>=2024.1')")
