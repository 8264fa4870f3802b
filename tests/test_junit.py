"""`--junit FILE`: the JUnit XML shape CI tools read, a case per check, a failure per unmet expectation."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import strategies as st

from platform_testbed.checks import BUILTIN_CHECKS
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config import scenario


def assert_junit_shape(path):
    """What JUnit readers need (Jenkins/GitLab's XSD, as a check): the tree and its counts.

    ``testsuites`` > ``testsuite`` > ``testcase``; each suite's ``tests``/``failures``/
    ``errors`` equal its cases, failed cases and errored cases, the root's their sums; each
    case has a ``classname`` and a ``name``; each ``failure`` has a ``message``. Returns the root.
    """
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    suites = list(root)
    assert suites
    assert all(s.tag == "testsuite" for s in suites)
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for suite in suites:
        cases = list(suite.iter("testcase"))
        assert [c.tag for c in suite] == ["testcase"] * len(cases)
        counted = {
            "tests": len(cases),
            "failures": sum(c.find("failure") is not None for c in cases),
            "errors": sum(c.find("error") is not None for c in cases),
        }
        for key, value in counted.items():
            assert int(suite.get(key)) == value, (suite.get("name"), key)
            totals[key] += value
        assert suite.get("name")
        for case in cases:
            assert case.get("classname")
            assert case.get("name")
            allowed = {"failure", "error", "skipped", "system-out", "system-err"}
            assert {child.tag for child in case} <= allowed
            for failure in case.findall("failure"):
                assert failure.get("message")
    for key, value in totals.items():
        assert int(root.get(key)) == value, key
    return root


def cases_of(root):
    """``{(suite name, case name): failure message or None}``."""
    return {
        (suite.get("name"), case.get("name")):
            None if case.find("failure") is None else case.find("failure").get("message")
        for suite in root for case in suite
    }


def test_compare_writes_one_case_per_check_and_no_failure_when_expectations_hold(tmp_path, capsys):
    """A scenario whose [expect] holds: a passing case for each built-in check."""
    out = tmp_path / "report.xml"
    assert main(["compare", "sept25-crash-loop", "--runs", "2", "--junit", str(out)]) == 0
    cases = cases_of(assert_junit_shape(out))
    assert cases == {("sept25-crash-loop", check): None for check in BUILTIN_CHECKS}


def test_an_unmet_expectation_is_one_failure_on_its_checks_case(tmp_path, capsys):
    """count misses the crash loop in every seed: expecting `caught` fails count's case alone."""
    out = tmp_path / "report.xml"
    code = main(["compare", "sept25-crash-loop", "--runs", "3", "--set", "expect.count=caught",
                 "--junit", str(out)])
    assert code == 1
    root = assert_junit_shape(out)
    failed = {k: v for k, v in cases_of(root).items() if v is not None}
    assert failed == {("sept25-crash-loop", "count"): "expected caught, got missed 3 in 3 of 3 seed(s)"}
    text = root.find("testsuite/testcase/failure").text
    assert text.splitlines() == [f"seed {s}: expected caught, got missed" for s in (1, 2, 3)]


def test_checks_writes_a_suite_per_scenario_and_a_case_per_check(tmp_path, capsys):
    """`testbed checks --junit`: every shipped scenario × every built-in check is a case."""
    out = tmp_path / "checks.xml"
    assert main(["checks", "--runs", "1", "--junit", str(out)]) == 0
    cases = cases_of(assert_junit_shape(out))
    assert set(cases) == {(s, c) for s in scenario.shipped() for c in BUILTIN_CHECKS}


def test_replay_writes_a_case_per_recorded_run_and_a_failure_per_unmet_expect(tmp_path, capsys):
    """Replay with --expect: the run whose verdict differs fails, the others pass."""
    looks, out = tmp_path / "looks.jsonl", tmp_path / "replay.xml"
    main(["compare", "sept25-crash-loop", "--check", "count", "--check", "timestamp",
          "--runs", "2", "--record", str(looks)])
    code = main(["replay", str(looks), "--expect", "count=fail", "--expect", "timestamp=fail",
                 "--junit", str(out)])
    assert code == 1
    cases = cases_of(assert_junit_shape(out))
    suite = str(looks)
    # count passes the crash loop (the incident), timestamp fails it (the fix).
    assert cases == {
        (suite, "count [count/seed=1]"): "count on count/seed=1: expected fail, got pass",
        (suite, "count [count/seed=2]"): "count on count/seed=2: expected fail, got pass",
        (suite, "timestamp [timestamp/seed=1]"): None,
        (suite, "timestamp [timestamp/seed=2]"): None,
    }


def test_the_report_is_written_atomically_over_an_old_one(tmp_path, capsys):
    """An existing report is replaced whole and no temporary file is left beside it."""
    out = tmp_path / "report.xml"
    out.write_text("old and not XML")
    assert main(["compare", "healthy-release", "--junit", str(out)]) == 0
    assert_junit_shape(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.xml"]


@pytest.mark.parametrize("command", [["compare", "healthy-release"], ["checks", "--runs", "1"]])
def test_a_junit_path_in_a_missing_folder_is_bad_input_before_any_run(command, tmp_path, capsys):
    """A --junit path whose folder does not exist: exit 2, one line naming --junit."""
    with pytest.raises(SystemExit) as stopped:
        main([*command, "--junit", str(tmp_path / "nope" / "r.xml")])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "argument --junit: " in err
    assert "does not exist" in err
    assert err.count("\n") == 1


def _commands(tmp_path):
    """compare, checks and replay, each as a command line writing --junit."""
    looks = tmp_path / "looks.jsonl"
    assert main(["compare", "healthy-release", "--check", "count", "--record", str(looks)]) == 0
    return {
        "compare": ["compare", "healthy-release", "--check", "count"],
        "checks": ["checks", "--runs", "1", "--check", "count"],
        "replay": ["replay", str(looks), "--check", "count"],
    }


@pytest.mark.parametrize("command", ["compare", "checks", "replay"])
def test_a_junit_symlink_is_refused_without_force_and_written_through_with_it(
    command, tmp_path, capsys, monkeypatch
):
    """Every command with --junit refuses a symlink before any work, and --force writes through it.

    The refusal says "give --force", so each of them takes --force; with it the link stays
    and the file it names is replaced by the report.
    """
    argv = _commands(tmp_path)[command]
    target, link = tmp_path / "target.xml", tmp_path / "link.xml"
    target.write_text("previous\n")
    link.symlink_to(target)
    capsys.readouterr()

    def no_world(*_, **__):
        raise AssertionError("work started before --junit was checked")

    with monkeypatch.context() as patched:
        for where in (
            "platform_testbed.sim.cli.commands.compare", "platform_testbed.sim.cli.commands.replay_all"
        ):
            patched.setattr(where, no_world)
        assert main([*argv, "--junit", str(link)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"--junit {link}: is a symlink" in err
    assert "give --force" in err
    assert target.read_text() == "previous\n"

    assert main([*argv, "--junit", str(link), "--force"]) in (0, 1)
    assert link.is_symlink()
    assert_junit_shape(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.xml", "looks.jsonl", "target.xml"]


# --- the CI gate: --expect, --fail-on, and <error> for a check that gave no verdict ---------

SMALL_SWEEP = Path(__file__).parent / "data" / "sweeps" / "small.toml"
SLEEPER = ["--check-cmd", "sleep 100", "--check-cmd-timeout", "1"]


def errors_of(root):
    """``{(suite name, case name): error message}`` for the cases that have an ``error``."""
    return {(s.get("name"), c.get("name")): c.find("error").get("message")
            for s in root for c in s if c.find("error") is not None}


def test_a_check_that_times_out_is_a_junit_error_with_its_reason(tmp_path, capsys):
    """A --check-cmd that never answers: errors="1", the reason in <error message>, no failure."""
    out = tmp_path / "j.xml"
    assert main(["compare", "sept25-crash-loop", *SLEEPER, "--junit", str(out)]) == 0
    root = assert_junit_shape(out)
    assert root.get("errors") == "1"
    assert root.get("failures") == "0"
    [(case, message)] = errors_of(root).items()
    assert case == ("sept25-crash-loop", "sleep")
    assert "gave no answer within 1 s" in message
    assert message.endswith("(seed 1)")
    assert "gave no answer within 1 s" in root.find("testsuite/testcase/system-out").text


def test_fail_on_error_makes_an_erroring_check_exit_1(tmp_path, capsys):
    """--fail-on error: the same timed-out check fails the command, and says why on stderr."""
    out = tmp_path / "j.xml"
    code = main(["compare", "sept25-crash-loop", *SLEEPER, "--fail-on", "error", "--junit", str(out)])
    assert code == 1
    assert "--fail-on: sleep error in 1 of 1 run(s)" in capsys.readouterr().err
    assert assert_junit_shape(out).get("errors") == "1"


def test_fail_on_a_wrong_verdict_is_a_failure_on_that_checks_case(tmp_path, capsys):
    """--fail-on missed: count misses the crash loop (exit 1, a failure on its case alone)."""
    out = tmp_path / "j.xml"
    code = main(["compare", "sept25-crash-loop", "--runs", "2", "--check", "count", "--check",
                 "timestamp", "--fail-on", "missed,undecided", "--junit", str(out)])
    assert code == 1
    failed = {k: v for k, v in cases_of(assert_junit_shape(out)).items() if v is not None}
    assert failed == {("sept25-crash-loop", "count"): "missed 2 in 2 of 2 seed(s) (--fail-on)"}


def test_fail_on_an_outcome_that_did_not_happen_exits_0(capsys):
    """--fail-on false_alarm on the crash loop: nobody false-alarms, so the gate passes."""
    assert main(["compare", "sept25-crash-loop", "--fail-on", "false_alarm", "--fail-on", "error"]) == 0


def test_expect_on_the_command_line_is_judged_as_the_scenarios_expect(tmp_path, capsys):
    """--expect count=caught fails as the [expect] entry does; --expect count=missed holds."""
    out = tmp_path / "j.xml"
    assert main(["compare", "sept25-crash-loop", "--runs", "2", "--expect", "count=caught",
                 "--junit", str(out)]) == 1
    failed = {k: v for k, v in cases_of(assert_junit_shape(out)).items() if v is not None}
    assert failed == {("sept25-crash-loop", "count"): "expected caught, got missed 2 in 2 of 2 seed(s)"}
    capsys.readouterr()
    assert main(["compare", "sept25-crash-loop", "--check", "count", "--expect", "count=missed"]) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--expect", "count"], "--expect 'count': expected CHECK=OUTCOME"),
        (["--expect", "count=cought"], "--expect 'count=cought': the outcome must be one of caught"),
        (["--fail-on", "erorr"], "--fail-on 'erorr': not an outcome (did you mean error?)"),
        (["--fail-on", ","], "--fail-on: name at least one outcome"),
    ],
)
def test_a_bad_gate_option_is_one_line_and_exit_2_before_any_run(argv, message, tmp_path, capsys):
    """A malformed --expect or --fail-on: exit 2, one line naming it, no report written."""
    out = tmp_path / "j.xml"
    assert main(["compare", "sept25-crash-loop", *argv, "--junit", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_sweep_writes_a_case_per_check_with_fail_on_failures(tmp_path, capsys):
    """sweep --junit --fail-on missed: a case per check, a failure naming worlds where it missed."""
    out, rows = tmp_path / "s.xml", tmp_path / "rows.csv"
    code = main(["sweep", str(SMALL_SWEEP), "--workers", "1", "--no-progress", "--out", str(rows),
                 "--fail-on", "missed", "--junit", str(out), "--json"])
    summary = json.loads(capsys.readouterr().out)
    root = assert_junit_shape(out)
    cases = cases_of(root)
    assert set(cases) == {("small", "count"), ("small", "timestamp")}
    for (_, check), failure in cases.items():
        missed = summary["checks"][check]["missed"]
        assert (failure is None) == (missed == 0), (check, failure)
        if missed:
            assert failure.startswith(f"missed {missed} in {missed} of ")
    assert code == (1 if any(c["missed"] for c in summary["checks"].values()) else 0)


def test_sweep_junit_marks_a_broken_world_as_an_error(tmp_path, capsys):
    """A user check that raises in every world: each case is an error carrying the exception."""
    check = tmp_path / "boom.py"
    check.write_text("class Boom:\n    name = 'boom'\n"
                     "    def next(self, publish_started_ms, looks):\n        raise RuntimeError('kaput')\n")
    sweep = tmp_path / "s.toml"
    sweep.write_text(f'name = "s"\nscenario = "sept25-crash-loop"\nchecks = ["{check}:Boom"]\n'
                     'seeds = 1\n[axes]\n"check.look_delay_s" = [3, 10]\n')
    out = tmp_path / "s.xml"
    main(["sweep", str(sweep), "--workers", "1", "--no-progress", "--out", str(tmp_path / "r.csv"),
          "--junit", str(out)])
    [(case, message)] = errors_of(assert_junit_shape(out)).items()
    assert case == ("s", "boom")
    assert "kaput" in message
    assert "2 of 2 world(s)" in message


def test_hunt_writes_a_failure_per_world_found_with_fail_on_found(tmp_path, capsys):
    """hunt --junit --fail-on found: each world found is a failed case whose text says how to
    reproduce it."""
    out = tmp_path / "h.xml"
    found = tmp_path / "found"
    code = main(["hunt", "--check", "count", "--budget", "10", "--out", str(found),
                 "--no-progress", "--json", "--junit", str(out), "--fail-on", "found"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    root = assert_junit_shape(out)
    failures = [c.find("failure") for s in root for c in s]
    assert len(failures) == len(report["found"]) > 0
    for failure, world in zip(failures, report["found"], strict=True):
        assert failure.get("message").startswith(f"{world['outcome']}: {world['kind']}")
        assert f"reproduce: testbed compare {world['file']} --check count" in failure.text


def test_hunt_lists_found_worlds_as_skipped_without_fail_on(tmp_path, capsys):
    """hunt --junit alone: each world found is a skipped case (a JUnit publisher stays green),
    saying how to reproduce it; no failure and no error anywhere in the report."""
    out = tmp_path / "h.xml"
    code = main(["hunt", "--check", "count", "--budget", "10", "--out", str(tmp_path / "found"),
                 "--no-progress", "--json", "--junit", str(out)])
    report = json.loads(capsys.readouterr().out)
    assert code == 1  # the exit status still says a world was found
    root = assert_junit_shape(out)
    skipped = [c.find("skipped") for s in root for c in s]
    assert len(skipped) == len(report["found"]) > 0
    assert root.get("failures") == root.get("errors") == "0"
    assert [s.get("skipped") for s in root] == [str(len(report["found"]))]
    for case, world in zip(skipped, report["found"], strict=True):
        assert f"reproduce: testbed compare {world['file']} --check count" in case.get("message")


def test_hunt_fail_on_names_only_found(capsys):
    """hunt --fail-on takes 'found' alone; a near miss is refused with a suggestion."""
    assert main(["hunt", "--check", "count", "--fail-on", "fund"]) == 2
    assert "did you mean found?" in capsys.readouterr().err


def test_hunt_that_finds_nothing_writes_one_passing_case(tmp_path, capsys, monkeypatch):
    """A hunt with nothing found is one case with no failure, so CI shows it ran."""
    # A space of one world, the base, which timestamp gets right (as tests/test_hunt.py does).
    monkeypatch.setattr("platform_testbed.sim.hunt.search.worlds",
                        lambda base, any_behavior=True: st.just(()))
    out = tmp_path / "h.xml"
    assert main(["hunt", "--check", "timestamp", "--budget", "5", "--out", str(tmp_path / "f"),
                 "--no-progress", "--junit", str(out)]) == 0
    assert cases_of(assert_junit_shape(out)) == {("hunt timestamp", "timestamp"): None}
