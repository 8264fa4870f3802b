"""The pytest plugin: a user project with its own tests runs them; the doc's data model is the code's."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from platform_testbed.checks import model
from platform_testbed.sim.kit import pytest_plugin
from platform_testbed.sim.kit.testing import App, World
from tests.doc_blocks import blocks

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "your-check.md"


def _project(folder: Path) -> str:
    """The doc's saved files written into ``folder``; returns the console block that runs them."""
    shown = None
    for kind, name, body in blocks(DOC):
        if kind == "python" and name:
            (folder / name).write_text(body, encoding="utf-8")
        if kind == "console" and body.startswith("$ pytest"):
            shown = body
    assert shown is not None, "the doc shows no pytest run"
    return shown


def _broken_project(tmp_path: Path) -> None:
    """The doc's project and a test_broken.py stating a guarantee its check breaks."""
    _project(tmp_path)
    (tmp_path / "test_broken.py").write_text(
        "from my_check import NewestExitCheck\n"
        "from platform_testbed.sim.kit.pytest_plugin import guarantee_test\n"
        "from platform_testbed.sim.kit.strategies import never_misses\n"
        "test_never_misses = guarantee_test(NewestExitCheck, never_misses)\n")


def test_the_docs_user_project_passes_its_own_tests_with_the_plugin(tmp_path):
    """my_check.py and test_my_check.py from the doc, in an empty folder: pytest prints what the doc shows."""
    shown = _project(tmp_path)
    command, *_, summary = shown.strip().splitlines()
    argv = command.removeprefix("$ ").split()
    assert argv[0] == "pytest"
    env = os.environ | {"HYPOTHESIS_PROFILE": "ci", "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", *argv, "-p", "no:cacheprovider"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(rf"^{re.escape(summary)}\b", done.stdout, re.M), done.stdout


def test_a_broken_guarantee_fails_the_users_test_with_the_smallest_world(tmp_path):
    """guarantee_test of a guarantee the doc's check breaks: pytest fails, showing the world found."""
    _broken_project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_broken.py",
         "--testbed-examples", "50"], cwd=tmp_path, env=os.environ | {"PYTHONPATH": str(tmp_path)},
        capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 1, done.stdout
    assert "newest-exit breaks never_misses" in done.stdout
    assert "in the smallest world found:" in done.stdout
    assert "1 failed" in done.stdout


def test_a_guarantee_test_runs_with_the_plugin_off(tmp_path):
    """pytest -p no:testbed: guarantee_test still searches (the kit's defaults) and finds
    the smallest world, where the run's options it reads are not there."""
    _broken_project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:testbed",
         "test_broken.py"], cwd=tmp_path,
        env=os.environ | {"PYTHONPATH": str(tmp_path), "HYPOTHESIS_PROFILE": "ci"},
        capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 1, done.stdout
    assert "newest-exit breaks never_misses" in done.stdout
    assert "no option named" not in done.stdout


def test_a_bad_examples_count_is_a_usage_error(tmp_path):
    """--testbed-examples 0: pytest stops with one usage line naming the option."""
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--testbed-examples", "0"], cwd=tmp_path, capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 4
    assert "--testbed-examples: must be 1 or more (got 0)" in done.stderr


def test_the_world_types_have_registered_strategies():
    """st.from_type(World) and st.from_type(App) draw the kit's worlds and apps."""
    pytest_plugin.register_strategies()
    drawn = []

    @settings(max_examples=5, deadline=None)
    @given(st.from_type(World), st.from_type(App))
    def draw(world, app):
        drawn.append((world, app))

    draw()
    assert drawn
    assert all(isinstance(w, World) and isinstance(a, App) for w, a in drawn)


def test_guarantee_test_names_its_guarantee():
    """The test made by guarantee_test carries the guarantee's docstring, for -v and failures."""
    from platform_testbed.sim.kit.strategies import never_misses  # noqa: PLC0415

    made = pytest_plugin.guarantee_test(object, never_misses)
    assert made.__doc__ == f"The check keeps its guarantee: {never_misses.__doc__}"


@pytest.mark.parametrize(
    "member",
    [model.Look, model.MachineSnapshot, model.Event, model.Wait, model.Verdict,
     model.Look.machine, model.MachineSnapshot.crashes_since, model.MachineSnapshot.newest_exit,
     model.MachineSnapshot.gave_up, model.Event.is_crash],
    ids=lambda m: getattr(m, "__qualname__", None) or m.fget.__qualname__,
)
def test_the_docs_data_model_quotes_the_codes_docstrings(member):
    """Each class and method the doc lists is described by its docstring's first line, verbatim."""
    doc = " ".join(DOC.read_text(encoding="utf-8").split())
    first = inspect.getdoc(member).splitlines()[0]
    assert first in doc, first


@pytest.mark.parametrize("cls", [model.Look, model.MachineSnapshot, model.Event])
def test_the_docs_data_model_lists_every_field(cls):
    """Every public field of Look, MachineSnapshot and Event is named in the doc (`name: type`)."""
    section = DOC.read_text(encoding="utf-8").split("## The data a check receives")[1]
    fields = getattr(cls, "_fields", None) or [f for f in cls.__dataclass_fields__ if not f.startswith("_")]
    for name in fields:
        assert f"`{name}: " in section or f"`{name}: str`" in section, (cls.__name__, name)
