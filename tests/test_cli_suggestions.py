"""Every closed set a person types into suggests the nearest member, in one short line."""

from __future__ import annotations

import pytest

from platform_testbed.sim.cli.parser import main

CASES = [
    (["compare", "sept25-crash-loop", "--check", "cuont"], "(did you mean count?)"),
    (["compare", "sept25-crash-loop", "--expect", "count=cought"], "(did you mean caught?)"),
    (["compare", "sept25-crash-loop", "--fail-on", "misssed"], "(did you mean missed?)"),
    (["compare", "sept25-crash-loop", "--check-opt", "look_delay=3"],
     "(did you mean look_delay_s?; count, timestamp, restart-counter take it)"),
    (["compare", "sept25-crash-loop", "--check-opt", "cuont.look_delay_s=3"], "(did you mean count?)"),
    (["replay", "x.jsonl", "--expect", "count=fial"], "(did you mean fail?)"),
    (["hunt", "--check", "count", "--fail-on", "fund"], "(did you mean found?)"),
    (["compare", "sept25-crash-loop", "--check-timout", "5"], "did you mean --check-timeout?"),
]


@pytest.mark.parametrize(("argv", "hint"), CASES)
def test_a_near_miss_is_named_on_one_short_line(argv, hint, capsys):
    """Exit 2, one line, the suggestion in it, and never a line of every check's every field."""
    try:
        code = main(argv)
    except SystemExit as ended:
        code = ended.code
    said = capsys.readouterr().err
    assert code == 2
    assert hint in said
    assert said.count("\n") == 1
    assert len(said) < 300, said


def test_an_option_nobody_declares_and_nothing_near_is_still_short(capsys):
    """No near name: a count and one check's fields as an example, not all 26 fields of six checks."""
    assert main(["compare", "sept25-crash-loop", "--check-opt", "zzz=1"]) == 2
    said = capsys.readouterr().err
    assert "options in all, each a field of its check, e.g. count: look_delay_s" in said
    assert len(said) < 300
