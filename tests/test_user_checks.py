"""User checks everywhere, and where each check option comes from (README "Check options")."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import pytest

from platform_testbed.checks import BUILTIN_CHECKS
from platform_testbed.sim.checkload.loader import build_checks
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config.scenario import CheckTable
from platform_testbed.sim.sweep import load_sweep, run_sweep
from platform_testbed.sim.sweep.heatmap import miss_grid, save_heatmap
from platform_testbed.sim.sweep.units import check_names

CHECK = '''
from dataclasses import dataclass
from platform_testbed.checks import Verdict, Wait

@dataclass(frozen=True)
class PollCheck:
    """Pass after one wait of poll_s: the decision time shows the poll it ran with."""
    poll_s: float = 5.0
    retries: int = 2
    name = "poll-check"

    def next(self, publish_started_ms, looks):
        if not looks:
            return Wait(self.poll_s)
        return Verdict(True, f"waited {self.poll_s} s")

class Raises:
    """Raise on the first call."""
    name = "raises"

    def next(self, publish_started_ms, looks):
        return helper_that_fails()

def helper_that_fails():
    raise RuntimeError("boom")
'''

BARE = """name = "bare"
seed = 1
horizon_s = 300
[release]
behavior = "crash_after"
crash_after_s = 2.5
"""


@pytest.fixture
def user(tmp_path: Path) -> Path:
    path = tmp_path / "mine.py"
    path.write_text(CHECK)
    return path


@pytest.fixture
def bare(tmp_path: Path) -> str:
    """A scenario with no [check] table at all."""
    path = tmp_path / "bare.toml"
    path.write_text(BARE)
    return str(path)


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    main([*argv, "--json"])
    doc: dict = json.loads(capsys.readouterr().out)
    return doc


def test_check_table_defaults_are_the_builtins_defaults() -> None:
    """Leaving a [check] key unset changes nothing for a built-in: its default is the table's."""
    table = CheckTable()
    for cls in BUILTIN_CHECKS.values():
        for f in dataclasses.fields(cls):
            if f.name in CheckTable.model_fields:
                assert f.default == getattr(table, f.name), (cls.__name__, f.name)


def test_a_user_check_keeps_its_own_default_when_the_scenario_sets_nothing(user, bare, capsys):
    """A user check declaring poll_s = 5 runs at 5 s in a scenario with no [check] table."""
    doc = _json(capsys, ["compare", bare, "--check", f"{user}:PollCheck"])
    result = doc["runs"][0]["results"][0]
    assert result["decided_at_s"] == 5.0
    assert doc["check_options"]["poll-check"]["poll_s"] == {"value": 5.0, "source": "default"}


def test_a_key_the_scenario_sets_overrides_a_user_checks_default(user, bare, capsys):
    """--set check.poll_s=2 is the scenario setting the key: the user check runs at 2 s."""
    doc = _json(capsys, ["compare", bare, "--check", f"{user}:PollCheck",
                         "--set", "check.poll_s=2"])
    assert doc["runs"][0]["results"][0]["decided_at_s"] == 2.0
    assert doc["check_options"]["poll-check"]["poll_s"] == {"value": 2.0, "source": "scenario"}


def test_check_opt_overrides_the_scenario(user, bare, capsys):
    """--check-opt beats the scenario's [check] value for the same key."""
    doc = _json(capsys, ["compare", bare, "--check", f"{user}:PollCheck",
                         "--set", "check.poll_s=2", "--check-opt", "poll_s=3"])
    assert doc["runs"][0]["results"][0]["decided_at_s"] == 3.0
    assert doc["check_options"]["poll-check"]["poll_s"] == {"value": 3.0, "source": "--check-opt"}


def test_check_opt_reaches_builtin_checks(capsys):
    """--check-opt look_delay_s=3 builds count with it: its looks come 3 s apart, not 10."""
    base = _json(capsys, ["compare", "sept25-crash-loop", "--check", "count"])
    doc = _json(capsys, ["compare", "sept25-crash-loop", "--check", "count",
                         "--check-opt", "look_delay_s=3"])
    assert doc["check_options"]["count"]["look_delay_s"] == {"value": 3.0, "source": "--check-opt"}
    base_looks = [look["at_s"] for look in base["runs"][0]["results"][0]["looks"]]
    looks = [look["at_s"] for look in doc["runs"][0]["results"][0]["looks"]]
    assert looks != base_looks
    assert 3.0 in {round(b - a, 3) for a, b in itertools.pairwise(looks)}


def test_a_scoped_check_opt_reaches_only_the_named_check(capsys):
    """--check-opt count.look_delay_s=3 changes count; timestamp keeps the scenario's 10 s."""
    doc = _json(capsys, ["compare", "sept25-crash-loop", "--check", "count", "--check", "timestamp",
                         "--check-opt", "count.look_delay_s=3"])
    assert doc["check_options"]["count"]["look_delay_s"]["value"] == 3.0
    assert doc["check_options"]["timestamp"]["look_delay_s"] == {"value": 10.0,
                                                                  "source": "scenario"}


def test_an_option_no_chosen_check_has_is_one_line_naming_the_fields(capsys):
    """An unknown option: exit 2, one line naming the option and each check's fields."""
    assert main(["compare", "sept25-crash-loop", "--check", "min-healthy-time",
                 "--check-opt", "look_delay_s=3"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "look_delay_s" in err
    fields = ", ".join(f.name for f in dataclasses.fields(BUILTIN_CHECKS["min-healthy-time"]))
    assert f"min-healthy-time: {fields}" in err


@pytest.mark.parametrize("value", ["abc", "true"])
def test_an_option_of_the_wrong_type_is_bad_input(value: str, capsys):
    """poll_s must be a number: a word or a boolean is refused in one line, exit 2."""
    assert main(["compare", "sept25-crash-loop", "--check", "count",
                 "--check-opt", f"poll_s={value}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "count.poll_s" in err


def test_an_int_field_refuses_a_fraction(user, bare, capsys):
    """A user field typed int refuses 1.5 (strict types, no silent rounding)."""
    assert main(["compare", bare, "--check", f"{user}:PollCheck", "--check-opt", "retries=1.5"]) == 2
    assert "poll-check.retries" in capsys.readouterr().err


def test_two_checks_with_the_same_name_are_refused(capsys):
    """Results are keyed by name: a second check named count is bad input."""
    assert main(["compare", "sept25-crash-loop", "--check", "count", "--check", "count"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "'count'" in err


def test_the_header_says_each_checks_options_and_their_source(user, bare, capsys):
    """The text report's header lists each check's options grouped by where they came from."""
    main(["compare", bare, "--check", f"{user}:PollCheck", "--check", "count",
          "--check-opt", "poll_s=3"])
    out = capsys.readouterr().out
    assert "poll-check  poll_s=3 (--check-opt); retries=2 (default)" in out
    assert "count       poll_s=3 (--check-opt); look_delay_s=5, start_timeout_s=60 (default)" in out


def test_debug_shows_the_traceback_of_a_check_that_raised(user, capsys):
    """--debug prints the check's traceback (down to the user's own function); without it, none."""
    argv = ["compare", "sept25-crash-loop", "--check", f"{user}:Raises", "--check", "count"]
    assert main(argv) == 0
    quiet = capsys.readouterr().out
    assert "ERROR" in quiet
    assert "Traceback" not in quiet
    main([*argv, "--debug"])
    loud = capsys.readouterr().out
    assert "Traceback" in loud
    assert "helper_that_fails" in loud
    assert "RuntimeError: boom" in loud


def test_debug_shows_the_traceback_over_many_seeds(user, capsys):
    """The summary over seeds shows the first traceback of a check that raised."""
    main(["compare", "sept25-crash-loop", "--check", f"{user}:Raises", "--runs", "2", "--debug"])
    out = capsys.readouterr().out
    assert "raises raised on seed 1 (2 runs)" in out
    assert "helper_that_fails" in out


def test_replay_builds_a_user_check_with_the_options_it_was_recorded_with(user, bare, tmp_path,
                                                                          capsys):
    """A recorded user check replays with its own options (source: recording) and decides the same."""
    looks = tmp_path / "looks.jsonl"
    live = _json(capsys, ["compare", bare, "--check", f"{user}:PollCheck", "--check-opt",
                          "poll_s=4", "--record", str(looks)])
    doc = _json(capsys, ["replay", str(looks), "--check", f"{user}:PollCheck"])
    [row] = doc["results"]
    assert row["check_options"]["poll_s"] == {"value": 4.0, "source": "recording"}
    assert row["decided_at_s"] == live["runs"][0]["results"][0]["decided_at_s"] == 4.0


def test_replay_debug_shows_the_traceback(user, tmp_path, capsys):
    """replay --debug prints the traceback of a check that raised on the recording."""
    looks = tmp_path / "looks.jsonl"
    main(["compare", "sept25-crash-loop", "--check", "count", "--record", str(looks)])
    capsys.readouterr()
    main(["replay", str(looks), "--check", f"{user}:Raises", "--debug"])
    out = capsys.readouterr().out
    assert "helper_that_fails" in out


def test_checks_table_takes_a_user_check(user, capsys):
    """`testbed checks --check file.py:Obj` gives the user check a row with its docstring rule."""
    argv = ["checks", "--runs", "1", "--check", f"{user}:PollCheck", "--check", "count"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "poll-check" in out
    assert "Pass after one wait of poll_s" in out
    assert main([*argv, "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "| `poll-check` | Pass after one wait of poll_s" in out
    assert "| `count` |" in out


def test_sweep_summary_and_heatmap_name_a_user_check(user, tmp_path):
    """A sweep of a user check: its summary and heatmap panel are under its name, not empty."""
    sweep_file = tmp_path / "mine.toml"
    sweep_file.write_text(
        f'name = "mine"\nscenario = "sept25-crash-loop"\nchecks = ["{user}:PollCheck", "count"]\n'
        'seeds = 1\n[axes]\n"release.crash_after_s" = [1.0, 50.0]\n'
        '"check.look_delay_s" = [3, 10]\n'
    )
    sweep = load_sweep(str(sweep_file))
    assert check_names(sweep) == ("poll-check", "count")
    result = run_sweep(sweep, workers=1, per_task=4)
    assert result.summary is not None
    mine = result.summary.checks["poll-check"]
    assert mine.rows == 4
    assert mine.counts.total == 4
    xs, ys, _ = miss_grid(result.rows, "release.crash_after_s", "check.look_delay_s", "poll-check")
    assert xs
    assert ys
    png = tmp_path / "mine.png"
    save_heatmap(result.rows, sweep, png)
    assert png.stat().st_size > 0


def test_build_checks_reports_sources_for_a_validated_table() -> None:
    """Only the keys a table sets are 'scenario'; the rest are the check's 'default'."""
    table = CheckTable(look_delay_s=7.0)
    [loaded] = build_checks(["count"], table)
    sources = {o.key: (o.value, o.source) for o in loaded.setup.options}
    assert sources == {"look_delay_s": (7.0, "scenario"), "start_timeout_s": (60.0, "default"),
                       "poll_s": (1.0, "default")}
