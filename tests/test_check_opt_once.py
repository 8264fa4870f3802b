"""``--check-opt`` is one option: every command that takes it defines it, reads it and refuses it alike.

It is defined once (sim/cli/checkopts.py); these tests find every subcommand that has it
by walking the real parser, so a command that grows its own copy, with another help,
default or action, fails here.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from platform_testbed.sim.cli.checkopts import CHECK_OPT_HELP, check_options
from platform_testbed.sim.cli.parser import build_parser, main
from platform_testbed.sim.config.settings import BadInput

RECORDING = str(Path(__file__).parent / "data" / "fly" / "docs-get-exit-127.json")
#: Each command that takes --check-opt, with the arguments that make it run one check quickly.
COMMANDS = {
    "compare": ["compare", "sept25-crash-loop"],
    "replay": ["replay", RECORDING],
    "checks": ["checks", "--runs", "1"],
    "sweep": ["sweep", "sept25-unknowns", "--no-progress"],
    "hunt": ["hunt", "--no-progress"],
    "series": ["series", "sept25-three-publishes"],
}


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def _check_opt(parser: argparse.ArgumentParser) -> argparse.Action | None:
    found = [a for a in parser._actions if "--check-opt" in a.option_strings]
    assert len(found) <= 1
    return found[0] if found else None


def test_the_commands_with_check_opt_are_the_ones_tested_here():
    """Walking the parser finds --check-opt on exactly compare, replay, checks, sweep, hunt and series."""
    having = {name for name, p in _subcommands().items() if _check_opt(p) is not None}
    assert having == set(COMMANDS)


def test_every_check_opt_is_the_same_definition():
    """Same option strings, destination, action, default, metavar and help on every command."""
    shapes = set()
    for name in COMMANDS:
        action = _check_opt(_subcommands()[name])
        assert action is not None
        shapes.add((tuple(action.option_strings), action.dest, type(action).__name__,
                    repr(action.default), action.metavar, action.help, action.nargs))
    assert len(shapes) == 1, shapes
    (shape,) = shapes
    assert shape[2] == "_AppendAction"
    assert shape[5] == CHECK_OPT_HELP


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_parses_check_opt_into_the_same_list(name):
    """Repeated --check-opt values arrive in order, unread, on every command."""
    argv = [*COMMANDS[name], "--check-opt", "look_delay_s=5", "--check-opt", "count.poll_s=2"]
    args = build_parser().parse_args(argv)
    assert args.check_opt == ["look_delay_s=5", "count.poll_s=2"]
    assert check_options(args.check_opt) == {"look_delay_s": 5, "count.poll_s": 2}


def test_check_options_reads_values_as_toml_and_refuses_a_missing_equals():
    """Values are TOML (a number, a quoted string), else bare text; no '=' or no key is BadInput."""
    assert check_options(["a=1.5", 'b="x"', "c=word", "d=a=b"]) == {
        "a": 1.5, "b": "x", "c": "word", "d": "a=b"}
    for bad in ("nokey", "=5"):
        with pytest.raises(BadInput, match=rf"^--check-opt {bad!r}: expected KEY=VALUE$"):
            check_options([bad])


@pytest.mark.parametrize(("option", "line"), [
    ("nokey", "testbed: --check-opt 'nokey': expected KEY=VALUE"),
    ("nosuch=1", "testbed: --check-opt nosuch: no chosen check has this option "
                 "(count: look_delay_s, start_timeout_s, poll_s)"),
    ("look_delay_s=[1]", None),  # the loader's type rule: the same line on each command
])
def test_every_command_refuses_a_bad_check_opt_with_the_same_line(capsys, option, line):
    """Exit 2 and one identical stderr line from every command that takes it, nothing on stdout."""
    lines = set()
    for argv in COMMANDS.values():
        assert main([*argv, "--check", "count", "--check-opt", option]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert len(err.splitlines()) == 1, err
        lines.add(err.strip())
    assert len(lines) == 1, lines
    if line is not None:
        assert lines == {line}


@pytest.mark.parametrize("name", ["compare", "replay"])
def test_a_check_opt_value_reaches_the_check_on_every_command_that_reports_it(capsys, name):
    """The value and its source '--check-opt' show in the check's options in --json."""
    # compare may exit 1: a 7 s look delay can break the scenario's declared expectation.
    assert main([*COMMANDS[name], "--check", "count", "--check-opt", "look_delay_s=7",
                 "--json"]) in (0, 1)
    document = json.loads(capsys.readouterr().out)
    options = (document["check_options"]["count"] if name == "compare"
               else document["results"][0]["check_options"])
    assert options["look_delay_s"] == {"value": 7.0, "source": "--check-opt"}
