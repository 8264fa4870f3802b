"""`--junit FILE`: the JUnit XML shape CI tools read, a case per check, a failure per unmet expectation."""

import xml.etree.ElementTree as ET

import pytest

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
