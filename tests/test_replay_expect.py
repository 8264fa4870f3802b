"""`replay --expect CHECK=VERDICT`: exit 1 when a replayed run's verdict is not the expected one."""

from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main


@pytest.fixture
def looks(tmp_path, capsys):
    """A recording of the 25 September crash loop: count passes it, timestamp fails it."""
    path = tmp_path / "looks.jsonl"
    main(["compare", "sept25-crash-loop", "--check", "count", "--check", "timestamp",
          "--record", str(path)])
    capsys.readouterr()
    return str(path)


def test_expectations_that_hold_exit_0(looks, capsys):
    """Every expected verdict met: exit 0, and the report says they held."""
    assert main(["replay", looks, "--expect", "count=pass", "--expect", "timestamp=fail"]) == 0
    assert "expectations held: count=pass, timestamp=fail" in capsys.readouterr().out


def test_an_unmet_expectation_exits_1_and_names_the_run(looks, capsys):
    """count passes the crash loop, so expecting fail exits 1 with the run named."""
    assert main(["replay", looks, "--expect", "count=fail"]) == 1
    assert "NOT MET: count on count/seed=1: expected fail, got pass" in capsys.readouterr().out


def test_none_means_no_verdict(looks, tmp_path, capsys):
    """`none` is met by a run cut short before the check decided, not by a decided one."""
    assert main(["replay", looks, "--expect", "timestamp=none"]) == 1
    first_look = tmp_path / "first.jsonl"
    first_look.write_text(Path(looks).read_text().splitlines(keepends=True)[0])
    assert main(["replay", str(first_look), "--check", "count", "--expect", "count=none"]) == 0
    assert main(["replay", str(first_look), "--check", "count", "--expect", "count=pass"]) == 1


@pytest.mark.parametrize(
    ("item", "says"),
    [("count", "expected CHECK=VERDICT"), ("count=maybe", "one of pass, fail, none"),
     ("nope=pass", "nope did not run"), ("=pass", "expected CHECK=VERDICT")],
)
def test_a_malformed_expectation_is_bad_input(looks, capsys, item, says):
    """A bad --expect: exit 2 with one line naming --expect and the rule."""
    assert main(["replay", looks, "--expect", item]) == 2
    err = capsys.readouterr().err
    assert err.startswith("testbed: --expect")
    assert says in err
    assert err.count("\n") == 1


def test_two_different_verdicts_for_one_check_are_bad_input(looks, capsys):
    """Expecting both pass and fail of one check is a contradiction, refused."""
    assert main(["replay", looks, "--expect", "count=pass", "--expect", "count=fail"]) == 2
