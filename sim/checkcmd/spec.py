"""Command checks as check lists and the command line name them: ``cmd:COMMAND``, ``--check-cmd``."""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from platform_testbed.sim.checkcmd.check import (
    DEFAULT_TIMEOUT_S,
    CommandCheck,
    derive_name,
    split_command,
)
from platform_testbed.sim.checkcmd.wire import PROTOCOL, is_number
from platform_testbed.sim.config.options import from_args, option
from platform_testbed.sim.config.settings import BadInput

#: How check lists spell a command check, e.g. ``cmd:node examples/checks/timestamp.js``.
SPEC_PREFIX = "cmd:"


@dataclass(frozen=True)
class CommandSpec:
    """A command check as a check list names it: ``cmd:COMMAND`` or ``cmd:{json}``."""

    command: tuple[str, ...]
    name: str
    timeout_s: float = DEFAULT_TIMEOUT_S

    def text(self) -> str:
        """The check-list spelling, readable back by ``parse_spec``."""
        return SPEC_PREFIX + json.dumps(
            {"command": list(self.command), "name": self.name, "timeout_s": self.timeout_s}
        )

    def build(self, options: Mapping[str, Any]) -> CommandCheck:
        """The check, with the options each request will carry."""
        try:
            return CommandCheck(self.command, self.name, options, self.timeout_s)
        except ValueError as error:
            raise BadInput(f"check {self.name!r}: {error}") from None


def make_spec(command: str, name: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
              where: str = "--check-cmd") -> CommandSpec:
    """Validate a command check, or raise ``BadInput`` naming ``where`` and the rule."""
    try:
        argv = split_command(command)
    except ValueError as error:
        raise BadInput(f"{where} {command!r}: cannot split it into words ({error})") from None
    if shutil.which(argv[0]) is None:
        raise BadInput(f"{where} {command!r}: no program {argv[0]!r} (not found, or not executable)")
    option("check_cmd_timeout_s").check("--check-cmd-timeout" if where == "--check-cmd" else
                                        f"{where} {command!r}: field 'timeout_s'", timeout_s)
    label = name or derive_name(argv)
    if not (label.strip() and label.isprintable()):
        # The name heads columns and labels one-line rows: a newline, ESC or bidi control
        # in it would draw a row of its own (or restyle the terminal).
        given = ("--check-cmd-name" if where == "--check-cmd" else f"{where} {command!r}: field 'name'"
                 ) if name else f"{where} {command!r}: the name from its program"
        raise BadInput(f"{given} {label!r}: must be printable on one line (no control characters, "
                       "line breaks or bidi controls), and not blank"
                       + ("" if name else "; give one with --check-cmd-name"))
    return CommandSpec(tuple(argv), label, timeout_s)


def parse_spec(text: str) -> CommandSpec:
    """A ``cmd:`` check-list entry: ``cmd:COMMAND``, or ``cmd:{"command": …, "name": …}``."""
    body = text[len(SPEC_PREFIX) :]
    if not body.lstrip().startswith("{"):
        return make_spec(body, where="check")
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as error:
        raise BadInput(f"check {text!r}: not JSON after 'cmd:' ({error.msg})") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("command"), str | list):
        raise BadInput(f"check {text!r}: needs a field 'command' (a string or a list of words)")
    if unknown := sorted(set(obj) - {"command", "name", "timeout_s"}):
        raise BadInput(f"check {text!r}: unknown field {unknown[0]!r}")
    name, timeout_s = obj.get("name"), obj.get("timeout_s", DEFAULT_TIMEOUT_S)
    if name is not None and not (isinstance(name, str) and name):
        raise BadInput(f"check {text!r}: field 'name' must be a non-empty string")
    if not is_number(timeout_s):
        raise BadInput(f"check {text!r}: field 'timeout_s' must be a number")
    command = obj["command"]
    if isinstance(command, list):
        if not command or not all(isinstance(w, str) for w in command):
            raise BadInput(f"check {text!r}: field 'command' must be a non-empty list of strings")
        command = shlex.join(command)
    return make_spec(command, name, float(timeout_s), where="check")


def with_commands(names: Sequence[str], args: argparse.Namespace) -> list[str]:
    """The check list with each ``--check-cmd`` appended as a ``cmd:`` entry.

    With no ``names`` and no commands the list stays empty (all built-ins, as before).
    """
    commands: list[str] = args.check_cmd
    labels: list[str] = args.check_cmd_name
    if len(labels) > len(commands):
        raise BadInput(
            f"--check-cmd-name: {len(labels)} name(s) for {len(commands)} --check-cmd command(s)"
        )
    if not commands:
        return list(names)
    timeout = from_args("check_cmd_timeout_s", args)  # flag > TESTBED_CHECK_CMD_TIMEOUT_S > 5
    # Named checks alone replace the all-built-ins default, and so do commands: a user
    # asking for their command compares it with the built-ins they name.
    chosen = list(names)
    taken = {n for n in chosen if not n.startswith(SPEC_PREFIX)}
    for i, command in enumerate(commands):
        spec = make_spec(command, labels[i] if i < len(labels) else None, timeout)
        if spec.name in taken:
            raise BadInput(
                f"--check-cmd {command!r}: another check is named {spec.name!r}; "
                "give this one a name with --check-cmd-name"
            )
        taken.add(spec.name)
        chosen.append(spec.text())
    return chosen


def rules(names: Sequence[str]) -> dict[str, str]:
    """A one-line rule for each ``cmd:`` entry of a check list, for tables of every check."""
    specs = [parse_spec(n) for n in names if n.startswith(SPEC_PREFIX)]
    return {s.name: f"the command `{shlex.join(s.command)}` (check protocol {PROTOCOL})" for s in specs}


def with_timeout(names: Sequence[str], timeout_s: float | None) -> list[str]:
    """The check list with every ``cmd:`` entry's timeout set to ``timeout_s`` (a flag's or
    a variable's, which outrank a file's ``timeout_s``); the list as it is for None."""
    if timeout_s is None:
        return list(names)
    specs = (parse_spec(n) if n.startswith(SPEC_PREFIX) else None for n in names)
    return [n if s is None else CommandSpec(s.command, s.name, timeout_s).text()
            for n, s in zip(names, specs, strict=True)]
