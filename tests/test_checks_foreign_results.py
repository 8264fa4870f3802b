"""A check whose Wait and Verdict come from another module (a vendored checks/) is driven."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from platform_testbed.checks import Verdict
from platform_testbed.checks.drive import CheckFailed, drive

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_000_000


@dataclasses.dataclass(frozen=True)
class Wait:  # a vendored copy's class: the same shape, another module
    seconds: float


@dataclasses.dataclass(frozen=True)
class OtherVerdict:
    ok: bool
    reason: str
    machine: str | None = None


class Vendored:
    """Waits twice, then passes, with its own classes."""

    name = "vendored"

    def next(self, publish_started_ms, looks):
        return Wait(1.0) if len(looks) < 2 else OtherVerdict(True, "two looks, fine", "m1")


def _run(check):
    steps = drive(check, T0)
    waits = [next(steps)]
    try:
        while True:
            waits.append(steps.send(None))
    except StopIteration as done:
        return waits, done.value


def test_results_of_another_module_are_read_by_their_shape():
    """A foreign Wait(seconds) waits; a foreign verdict (ok, reason, machine) is the verdict."""
    waits, verdict = _run(Vendored())
    assert waits == [1.0, 1.0]
    assert verdict == Verdict(True, "two looks, fine", "m1")


def test_a_foreign_shape_still_obeys_the_rules():
    """Shape is not a pass: a foreign Wait with nan seconds is refused as ours would be."""

    class Bad:
        name = "bad"

        def next(self, p, looks):
            return Wait(float("nan"))

    with pytest.raises(CheckFailed, match="a Wait needs finite seconds"):
        _run(Bad())


def test_something_else_names_both_modules_and_the_import():
    """Neither shape: the message names the result's module, this driver's, and the import."""

    class Odd:
        name = "odd"

        def next(self, p, looks):
            return ("wait", 1)

    with pytest.raises(CheckFailed) as failed:
        _run(Odd())
    said = str(failed.value)
    assert "(builtins.tuple)" in said
    assert "platform_testbed.checks.model.Wait(seconds)" in said
    assert said.endswith("from platform_testbed.checks import Verdict, Wait")


def test_a_check_on_a_vendored_checks_copy_runs_in_compare(tmp_path):
    """The README's invitation: checks/ copied under another name, a check on its classes,
    run by `testbed compare` (it was refused: 'check returned Wait(seconds=1.0)')."""
    shutil.copytree(ROOT / "checks", tmp_path / "vendored_checks")
    (tmp_path / "mine.py").write_text(
        "from vendored_checks import TimestampCheck\n\n"
        "class Mine(TimestampCheck):\n    name = 'mine'\n")
    done = subprocess.run(
        [sys.executable, "-m", "platform_testbed", "compare", "sept25-crash-loop",
         "--check", "mine.py:Mine", "--json"], cwd=tmp_path, capture_output=True, text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{ROOT}:{tmp_path}"}, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["mine"]["caught"] == 1  # as timestamp: not error
