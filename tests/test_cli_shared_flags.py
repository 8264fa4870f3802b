"""Every command that runs checks in worlds takes --check, --check-opt, --set and --seed."""

from __future__ import annotations

import json

import pytest

from platform_testbed.sim.cli.parser import build_parser
from platform_testbed.sim.cli.sweep import load_with_flags
from platform_testbed.sim.config.settings import BadInput

MINE = """
from platform_testbed.checks import TimestampCheck


class Mine(TimestampCheck):
    name = "mine"
"""


def _flags(command):
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[command]
    return {f for action in sub._actions for f in action.option_strings}


@pytest.mark.parametrize("command", ["compare", "checks", "sweep", "hunt"])
def test_the_commands_that_run_checks_in_worlds_take_the_four_flags(command):
    """--check, --check-opt, --set and --seed on each (hunt's --seed is hypothesis')."""
    assert {"--check", "--check-opt", "--set", "--seed"} <= _flags(command)


def test_series_takes_check_opt_and_set_and_they_reach_every_publish(capsys):
    """series: --set over every publish's scenario, --check-opt to every check (each publish
    keeps its own seed, so no --seed). A cap of 10 and a 30 s look: count catches all three."""
    from platform_testbed.sim.cli.parser import main  # noqa: PLC0415

    assert {"--check", "--check-opt", "--set"} <= _flags("series")
    assert main(["series", "sept25-three-publishes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["late_failures"]["count"] == 3
    assert main(["series", "sept25-three-publishes", "--json", "--set", "platform.event_log_cap=10",
                 "--check-opt", "look_delay_s=30"]) == 1  # the file expects 3: none now
    assert json.loads(capsys.readouterr().out)["late_failures"]["count"] == 0


def _sweep(*argv):
    return load_with_flags(build_parser().parse_args(["sweep", "sept25-unknowns", *argv]))


def test_sweep_flags_override_the_files_values(tmp_path):
    """The brief's line: --check replaces the file's checks, --set reaches the base world,
    --seed is the first seed; the file's other values stay."""
    mine = tmp_path / "mine.py"
    mine.write_text(MINE)
    file_only = _sweep()
    sweep = _sweep("--check", f"{mine}:Mine", "--set", "release.crash_after_s=3", "--seed", "7")
    assert sweep.checks == (f"{mine}:Mine",)
    assert sweep.base["release"]["crash_after_s"] == 3
    assert sweep.seeds == (7, 8, 9, 10)
    assert sweep.axes == file_only.axes
    assert file_only.checks == ("count", "timestamp")


def test_sweep_set_of_a_swept_key_holds_that_axis():
    """--set of an axis's key replaces the axis with the one value (the flag over the file)."""
    sweep = _sweep("--set", "check.look_delay_s=10")
    assert "check.look_delay_s" not in sweep.keys
    assert sweep.base["check"]["look_delay_s"] == 10


def test_sweep_check_opt_reaches_every_world_and_a_stray_one_is_refused():
    """--check-opt goes with the sweep to each world's checks; a key no check declares is
    refused before any world runs."""
    sweep = _sweep("--check-opt", "count.poll_s=2")
    assert sweep.options == (("count.poll_s", 2),)
    with pytest.raises(BadInput, match="no_such_key"):
        _sweep("--check-opt", "no_such_key=1")


def test_sweep_check_names_the_flag_when_unknown():
    """A --check that names no check is bad input before the file's rules."""
    with pytest.raises(BadInput, match="nosuch"):
        _sweep("--check", "nosuch")
