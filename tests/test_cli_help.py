"""Every command's help: its options in groups, and examples to copy."""

from __future__ import annotations

import argparse

import pytest

from platform_testbed.sim.cli.parser import build_parser

PARSER = build_parser()
COMMANDS = next(a for a in PARSER._actions if isinstance(a, argparse._SubParsersAction)).choices


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_shows_examples_of_itself(command):
    """``testbed COMMAND --help`` ends with examples, each a ``testbed COMMAND ...`` line."""
    text = COMMANDS[command].format_help()
    assert "\nexamples:\n" in text
    shown = text.split("\nexamples:\n", 1)[1].splitlines()
    assert any(line.strip().startswith(f"testbed {command}") for line in shown)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_with_many_options_groups_them(command):
    """More than eight options: in named groups (checks, limits, outputs, ...), not one list."""
    sub = COMMANDS[command]
    flags = [a for a in sub._actions if a.option_strings and a.dest != "help"]
    if len(flags) <= 8:
        return
    groups = [g for g in sub._action_groups if g._group_actions and g.title not in
              ("options", "positional arguments")]
    assert len(groups) >= 3, [g.title for g in sub._action_groups]


def test_the_top_help_shows_examples_and_the_precedence():
    """``testbed --help``: examples, and the one rule every value obeys."""
    text = PARSER.format_help()
    assert "testbed compare sept25-crash-loop" in text
    assert "the flag > its environment variable > the file's value > the default" in " ".join(text.split())
