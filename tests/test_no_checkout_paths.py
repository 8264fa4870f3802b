"""What `testbed` prints names shipped things, never a path only a checkout has."""

from __future__ import annotations

import argparse
import re

import pytest

from platform_testbed.sim.cli.parser import build_parser, main

# A checkout path said bare; "the project's docs/X.md" is the honest form when no URL exists.
CHECKOUT_PATH = re.compile(
    r"(?<!project's )\b(docs/|tests/data|scenarios/(sweeps|series|rollouts)|\.\./shared)"
)


def checkout_path(text: str) -> str | None:
    """The first checkout path in ``text``, read as one line (wrapped help, TOML's ``\\`` joins)."""
    found = CHECKOUT_PATH.search(" ".join(text.replace("\\\n", " ").split()))
    return found.group(0) if found else None


def _helps(parser: argparse.ArgumentParser, prefix: str = "testbed") -> list[tuple[str, str]]:
    """Every (command, help text) of the parser and its subcommands, recursively."""
    found = [(prefix, parser.format_help())]
    for action in parser._actions:  # argparse keeps subparsers here only
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _helps(sub, f"{prefix} {name}")
    return found


def test_checkout_path_pattern_matches_what_it_should():
    """The pattern finds a bare checkout path and lets the honest wording through."""
    assert checkout_path("see docs/fidelity.md") == "docs/"
    assert checkout_path("scenarios/sweeps/sept25_unknowns.toml") == "scenarios/sweeps"
    assert checkout_path("see the project's docs/fidelity.md") is None
    assert checkout_path("see the project's \\\n  docs/fidelity.md") is None


HELPS = _helps(build_parser())


@pytest.mark.parametrize(("command", "text"), HELPS, ids=[command for command, _ in HELPS])
def test_help_names_no_checkout_path(command, text):
    """Each --help names shipped resources, or the project's docs, not a path in a checkout."""
    assert checkout_path(text) is None, command


@pytest.mark.parametrize("argv", [["list"], ["list", "--profiles"], ["list", "--profiles", "--json"]])
def test_listings_name_no_checkout_path(argv, capsys):
    """`testbed list` and its profiles (descriptions and sources) name no checkout path."""
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert checkout_path(out) is None


def test_hunt_files_name_no_checkout_path(tmp_path, capsys):
    """The scenario files hunt writes (their descriptions) name no checkout path."""
    main(["hunt", "--check", "count", "--budget", "20", "--out", str(tmp_path), "--no-progress",
          "--seed", "0"])
    files = sorted(tmp_path.glob("*.toml"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert checkout_path(text) is None, path.name
