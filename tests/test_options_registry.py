"""One registry of options and limits: every parser reads it, nothing states a default twice."""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import build_parser, main
from platform_testbed.sim.config import options
from platform_testbed.sim.config.options import OPTIONS, markdown, resolve
from platform_testbed.sim.config.settings import BadInput

ROOT = Path(__file__).resolve().parent.parent
SIM = ROOT / "sim"
#: A variable the testbed sets for its own children (sim/checkcmd/child.py), never read
#: from a person: not an option.
NOT_OPTIONS = {"TESTBED_CHECK_PROCESS", "TESTBED_VTIME_SHM"}  # the second: vtime's clock file, to its library
#: A variable a person may set that still lives in another helper's module, to move into the
#: registry by its owner (the report says so): listed, so a new one is not missed.
PENDING = {"TESTBED_VTIME_CACHE": "sim/vtime/build.py"}
#: Defaults still stated beside the registry in another helper's file, each to be read from
#: the registry by its owner (the report says so); held equal here meanwhile.
#: Copies of a registry value held outside it (none left: step.py reads http_timeout_s).
KNOWN: dict[tuple[str, str], str] = {}
#: Names that share an entry's words and value but are another thing: compare --json lists
#: runs inline up to 10 (not --runs' default on checks).
OTHER = {("sim/cli/compareopts.py", "INLINE_RUNS")}
#: The real rollout's server program (run as its own process), whose flags are not testbed's.
OWN_PROGRAMS = {"sim/rollout/real/server.py"}


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


COMMANDS = _commands(build_parser())


def _flags(command: str) -> dict[str, options.Option]:
    return {o.flag_name: o for o in OPTIONS.values() if o.flag_name and command in o.commands}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_numeric_flag_comes_from_the_registry(command):
    """Each flag of a number is a registry entry for that command, with the entry's help and type."""
    for action in COMMANDS[command]._actions:
        for flag in action.option_strings:
            entry = _flags(command).get(flag)
            if action.type in (int, float):
                assert entry is not None, f"{command} {flag}: a number not in sim/config/options.py"
            if entry is not None:
                assert action.help == entry.help_text(command), (command, flag)
                assert action.type is options._TYPES[entry.kind], (command, flag)


def test_every_registry_flag_is_on_the_commands_it_names():
    """An entry's commands take its flag: the registry does not promise what no parser has."""
    for entry in OPTIONS.values():
        for command in entry.commands:
            taken = {f for a in COMMANDS[command]._actions for f in a.option_strings}
            assert entry.flag_name in taken, (entry.name, command)


def test_no_parser_takes_an_abbreviation():
    """allow_abbrev=False everywhere: --check-t is refused, not read as --check-timeout."""
    assert all(not p.allow_abbrev for p in [build_parser(), *COMMANDS.values()])
    with pytest.raises(SystemExit) as ended:
        main(["compare", "sept25-crash-loop", "--check-t", "5"])
    assert ended.value.code == 2


def _modules():
    for path in sorted(SIM.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text())


def _number(node: ast.AST | None) -> float | None:
    """A constant number, or a product/sum of them (``6 * 3600``), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(
            node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.Add | ast.Pow):
        left, right = _number(node.left), _number(node.right)
        if left is not None and right is not None:
            return eval(compile(ast.Expression(node), "n", "eval"))  # constants only
    return None


def _words(name: str) -> set[str]:
    return set(name.lower().split("_")) - {"", "s", "max", "min", "default", "env"}


def _same_idea(name: str, entry: str) -> bool:
    """One name's words hold the other's (``timeout_s`` and ``http_timeout_s``)."""
    mine, its = _words(name), _words(entry)
    return bool(mine and its) and (mine <= its or its <= mine)


def test_no_default_or_limit_is_stated_outside_the_registry():
    """No module of sim/ assigns a registry entry's default or bound to a name of the same
    words (``MAX_WORKERS = 256``, ``timeout_s: float = 120.0``): each is read from the registry."""
    values = {}
    for entry in OPTIONS.values():
        for value in (entry.default, entry.most, *dict(entry.defaults).values()):
            if isinstance(value, int | float) and value not in (0, 1):  # too common to judge
                values.setdefault(float(value), []).append(entry)
    found = []
    for where, tree in _modules():
        if where == "sim/config/options.py":
            continue
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, ast.AnnAssign) else []
            number = _number(getattr(node, "value", None))
            for target in targets:
                name = getattr(target, "id", None)
                if name is None or number is None:
                    continue
                for entry in values.get(float(number), []):
                    if _same_idea(name, entry.name) and (where, name) not in {*KNOWN, *OTHER}:
                        found.append(f"{where}: {name} = {number} ({entry.name})")
    assert found == []


def test_the_known_copies_and_the_vendored_driver_agree_with_the_registry():
    """What still holds its own copy (another helper's file; checks/, which a deploy tool
    vendors and which imports nothing of sim) has the registry's value."""
    from platform_testbed.checks.drive import MAX_LOOKS  # noqa: PLC0415
    from platform_testbed.sim.twin.step import ProcessStep  # noqa: PLC0415

    assert OPTIONS["max_looks"].default == MAX_LOOKS
    default = ProcessStep.__dataclass_fields__["timeout_s"].default
    assert default == OPTIONS["http_timeout_s"].default


def test_variables_and_flags_are_named_only_in_the_registry():
    """A ``TESTBED_*`` name, or a registry flag given to add_argument, appears in no other module."""
    envs = {o.env_name for o in OPTIONS.values() if o.env_name}
    flags = {o.flag_name for o in OPTIONS.values() if o.flag_name}
    found = []
    for where, tree in _modules():
        if where == "sim/config/options.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    node.value.startswith("TESTBED_") and node.value.isidentifier() and \
                    node.value not in NOT_OPTIONS | set(PENDING) | {"TESTBED_"}:
                found.append(f"{where}: {node.value}")
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument" \
                    and where not in OWN_PROGRAMS:
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant) and first.value in flags:
                    found.append(f"{where}: add_argument({first.value!r})")
    assert found == []
    assert envs >= {"TESTBED_CHECK_TIMEOUT_S", "TESTBED_CHECK_CMD_TIMEOUT_S", "TESTBED_HTTP_TIMEOUT_S"}


def test_the_three_timeouts_share_one_naming():
    """name_s, --name, TESTBED_NAME_S: the three timeouts, by one rule."""
    for name in ("check_timeout_s", "check_cmd_timeout_s", "http_timeout_s"):
        entry = OPTIONS[name]
        assert entry.env_name == f"TESTBED_{name.upper()}"
        assert entry.flag_name == "--" + name.removesuffix("_s").replace("_", "-")


@pytest.mark.parametrize("name", ["check_timeout_s", "check_cmd_timeout_s", "http_timeout_s"])
def test_one_precedence_flag_then_variable_then_file_then_default(name):
    """The flag beats the variable, the variable the file, the file the default."""
    env = {OPTIONS[name].env_name: "3"}
    assert resolve(name, 2.0, environ=env, file_value=4.0) == 2.0
    assert resolve(name, None, environ=env, file_value=4.0) == 3.0
    assert resolve(name, None, environ={}, file_value=4.0) == 4.0
    assert resolve(name, None, environ={}) == OPTIONS[name].default
    with pytest.raises(BadInput, match=rf"^{OPTIONS[name].env_name}: must be a number of seconds"):
        resolve(name, None, environ={OPTIONS[name].env_name: "nan"})


def test_a_timeout_variable_reaches_the_command(tmp_path):
    """TESTBED_HTTP_TIMEOUT_S is read by the door as --http-timeout would be (bad: exit 2)."""
    done = subprocess.run(
        [sys.executable, "-m", "platform_testbed", "compare", "sept25-crash-loop",
         "--check-http", "true"], env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
                                       "TESTBED_HTTP_TIMEOUT_S": "-1"},
        capture_output=True, text=True, cwd=tmp_path, check=False, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("testbed: TESTBED_HTTP_TIMEOUT_S: must be a number of seconds")


def test_the_options_page_is_generated_from_the_registry():
    """docs/options.md is the registry's markdown(), byte for byte (regenerate it if not)."""
    page = (ROOT / "docs" / "options.md").read_text()
    assert page == markdown(), "python -m platform_testbed.sim.config.options > docs/options.md"


def test_the_api_imports_no_command_line():
    """sim/api.py imports nothing of sim.cli (the API and the CLI both read the registry)."""
    tree = ast.parse((SIM / "api.py").read_text())
    named = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    assert not [m for m in named if ".cli" in m or m.endswith("cli")]


def test_the_api_names_parameters_not_flags():
    """A bad check or worker count given in Python names the parameter, never --check/--workers."""
    from platform_testbed.sim import api  # noqa: PLC0415

    with pytest.raises(BadInput) as bad:
        api.build("sept25-crash-loop", ["nosuch"])
    assert not str(bad.value).startswith("--")
    assert str(bad.value).startswith("checks")
    with pytest.raises(BadInput, match=r"^workers: must be at most 256 .*TESTBED_MAX_WORKERS"):
        api.sweep("sept25-unknowns", workers=257)
