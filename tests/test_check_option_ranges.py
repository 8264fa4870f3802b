"""A check option out of its declared range is bad input before any world runs, from any door.

The doors: ``--check-opt`` on the command line, a scenario file's ``[check]`` table, and
``sim.api.compare(..., options=...)``. The ranges of ``--check-opt`` and ``options=`` are the
checks' own (checks/options.py); a scenario's ``[check]`` table (look_delay_s,
start_timeout_s, poll_s) is judged first by the scenario's own schema (sim/config/scenario.py
``CheckTable``, stricter: every value > 0), whichever check runs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from platform_testbed.checks import BUILTIN_CHECKS
from platform_testbed.checks.options import declared_range
from platform_testbed.sim import api
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config.scenario import BadInput

SCENARIO = "sept25-crash-loop"

#: (check, option, text, rule words): every declared option with -1, nan and inf, and an
#: interval also with 0; a count also with 1.5 (not whole).
CASES = []
for _name, _cls in BUILTIN_CHECKS.items():
    for _field in dataclasses.fields(_cls):
        _rule = declared_range(_field)
        if _rule is None:
            continue
        _bad = ["-1", "nan", "inf"] + (["0"] if _rule.above else []) + (
            ["1.5"] if _rule.whole else [])
        CASES += [(_name, _field.name, text, _rule.rule()) for text in _bad]


@pytest.fixture
def no_world(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any world that starts fails the test: refusal must come first."""

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("a world ran before the options were checked")

    monkeypatch.setattr("platform_testbed.sim.publish.compare.run_checks", refuse)
    monkeypatch.setattr("platform_testbed.sim.publish.sharing.run_checks", refuse)


@pytest.mark.usefixtures("no_world")
@pytest.mark.parametrize(("check", "option", "text", "rule"), CASES)
def test_check_opt_out_of_range_is_refused(check: str, option: str, text: str, rule: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """``--check-opt OPTION=BAD`` exits 2 with one line naming the option, the check and the rule."""
    code = main(["compare", SCENARIO, "--check", check, "--check-opt", f"{option}={text}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1
    if rule.startswith("a whole number") and text != "-1":  # not an int: the type check speaks
        assert err[0].endswith(f"--check-opt {option}={text}: {check}.{option}: "
                               "input should be a valid integer")
    else:
        assert err[0].endswith(f"--check-opt {option}={text}: {check}'s {option} must be {rule}")


@pytest.mark.usefixtures("no_world")
@pytest.mark.parametrize(("option", "text"), [
    ("look_delay_s", "-1"), ("look_delay_s", "nan"), ("look_delay_s", "inf"),
    ("start_timeout_s", "-1"), ("start_timeout_s", "-inf"),
    ("poll_s", "-1"), ("poll_s", "nan"), ("poll_s", "inf"), ("poll_s", "0"),
])
def test_scenario_check_table_out_of_range_is_refused(
    option: str, text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """A scenario file's ``[check]`` value out of range exits 2 naming ``check.OPTION``
    (the scenario's schema judges it, before any check is built)."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'name = "s"\n[check]\n{option} = {text}\n', encoding="utf-8")
    code = main(["compare", str(scenario)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1
    assert f"check.{option}" in err[0]


@pytest.mark.usefixtures("no_world")
@pytest.mark.parametrize(("check", "option", "text", "rule"),
                         [c for c in CASES if c[2] == "-1" or "seconds" in c[3]])
def test_api_options_out_of_range_are_bad_input(check: str, option: str, text: str,
                                                rule: str) -> None:
    """``sim.api.compare(options=...)`` raises BadInput naming the option, check and rule."""
    value = int(text) if rule.startswith("a whole number") else float(text)
    with pytest.raises(BadInput, match=f"{check}'s {option} must be {rule}") as raised:
        api.compare(SCENARIO, [check], seeds=[0], options={option: value})
    assert str(raised.value).count("\n") == 0


def test_options_at_their_edges_run(capsys: pytest.CaptureFixture[str]) -> None:
    """A delay of 0 is allowed (at once); only the interval must be above 0."""
    code = main(["compare", SCENARIO, "--check", "count", "--runs", "1",
                 "--check-opt", "look_delay_s=0", "--check-opt", "start_timeout_s=0",
                 "--check-opt", "poll_s=0.001"])
    capsys.readouterr()
    assert code in (0, 1)
