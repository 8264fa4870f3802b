"""``checks/`` is pure: no environment reads, no signals, no module-level mutable state.

A deploy tool that vendors ``checks/`` must not inherit environment reads, signal handlers
or state shared between drives (issue 17). Read from the source (AST) and from the
imported modules' values; a drive of every built-in in a fresh interpreter leaves every
signal's handler as it found it.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime
import importlib
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, TypeVar

import pytest

CHECKS = Path(__file__).resolve().parents[1] / "checks"
SOURCES = sorted(CHECKS.glob("*.py"))
#: Modules whose use is I/O or process state, never pure decision code.
BANNED_MODULES = {"os", "signal", "subprocess", "socket", "time", "random", "sys"}
#: Values that cannot change once made.
_ATOMS = (type(None), bool, int, float, complex, str, bytes, type, re.Pattern,
          datetime.datetime, datetime.date, datetime.timedelta, TypeVar, types.UnionType,
          types.FunctionType)


def _module(path: Path) -> str:
    return "platform_testbed.checks" + ("" if path.stem == "__init__" else f".{path.stem}")


def _frozen(value: Any) -> bool:
    """Whether ``value`` is immutable all the way down."""
    if isinstance(value, _ATOMS):
        return True
    if isinstance(value, tuple | frozenset):
        return all(_frozen(item) for item in value)
    if isinstance(value, types.MappingProxyType):
        return all(_frozen(k) and _frozen(v) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        params = getattr(type(value), "__dataclass_params__", None)
        return bool(params and params.frozen) and all(
            _frozen(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


def test_the_predicate_tells_mutable_from_immutable() -> None:
    """The immutability rule this file applies: it refuses lists, dicts, sets and objects."""
    assert _frozen((1, "a", (2.0, None), frozenset({3})))
    assert _frozen(types.MappingProxyType({"a": (1,)}))
    assert not _frozen([1])
    assert not _frozen({"a": 1})
    assert not _frozen((1, [2]))
    assert not _frozen(types.MappingProxyType({"a": [1]}))
    assert not _frozen(object())


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_no_environment_signal_or_io_module_is_used(path: Path) -> None:
    """No ``os``/``signal``/... import, no ``environ``/``getenv``/``signal.`` anywhere in the module."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in BANNED_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in BANNED_MODULES:
                found.append(node.module)
        elif isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv", "setitimer"}:
            found.append(ast.unparse(node))
        elif isinstance(node, ast.Name) and node.id in {"environ", "getenv", "signal"}:
            found.append(node.id)
        elif isinstance(node, ast.Global):
            found.append(f"global {', '.join(node.names)}")
    assert not found, f"{path.name}: {found}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_module_level_holds_only_imports_definitions_and_immutable_values(path: Path) -> None:
    """At module level: imports, classes, functions, and names bound to immutable values."""
    tree = ast.parse(path.read_text(), str(path))
    module = importlib.import_module(_module(path))
    problems = []
    for number, node in enumerate(tree.body):
        if isinstance(node, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.ClassDef):
            continue
        if isinstance(node, ast.Expr) and number == 0 and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if not isinstance(target, ast.Name):
                    problems.append(f"line {node.lineno}: assigns {ast.unparse(target)}")
                elif not _frozen(getattr(module, target.id)):
                    problems.append(f"line {node.lineno}: {target.id} is a mutable "
                                    f"{type(getattr(module, target.id)).__name__}")
            continue
        problems.append(f"line {node.lineno}: {type(node).__name__} at module level")
    assert not problems, f"{path.name}: {problems}"


def test_class_level_state_of_the_builtins_is_immutable_or_per_object() -> None:
    """A built-in check's class holds no mutable value; its memos live on each object."""
    from platform_testbed.checks import BUILTIN_CHECKS  # noqa: PLC0415
    from platform_testbed.checks.memo import PerCheck  # noqa: PLC0415

    for cls in BUILTIN_CHECKS.values():
        for klass in cls.__mro__[:-1]:
            for key, value in vars(klass).items():
                if key.startswith("__") or callable(value) or isinstance(
                        value, property | classmethod | staticmethod | PerCheck):
                    continue
                assert _frozen(value), f"{klass.__name__}.{key} = {value!r}"


def test_two_check_objects_keep_two_memos() -> None:
    """A memo belongs to one object: two equal checks never share a fold."""
    from platform_testbed.checks import RestartCounterCheck  # noqa: PLC0415

    one, two = RestartCounterCheck(), RestartCounterCheck()
    assert one == two
    assert one._watches is not two._watches
    assert one._seen is not two._seen
    assert one._watches is one._watches


PROBE = '''
import signal
before = {s: signal.getsignal(s) for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)}
import importlib, pkgutil
import platform_testbed.checks as checks
for info in pkgutil.iter_modules(checks.__path__):
    importlib.import_module(f"platform_testbed.checks.{info.name}")
from platform_testbed.checks import BUILTIN_CHECKS, Event, Look, MachineSnapshot
from platform_testbed.checks.drive import drive
T0 = 1_000_000
snap = lambda at: MachineSnapshot("m1", "started", "app", (Event("start", "started", T0),), T0 + at, 0)
for cls in BUILTIN_CHECKS.values():
    steps = drive(cls(), T0)
    wait, at = next(steps), 0
    try:
        while True:
            at += round(wait * 1000)
            wait = steps.send(Look(T0 + at, (snap(at),)))
    except StopIteration:
        pass
after = {s: signal.getsignal(s) for s in before}
print(sorted(str(s) for s in before if before[s] != after[s]))
'''


def test_importing_and_driving_every_builtin_installs_no_signal_handler() -> None:
    """In a fresh interpreter, every signal's handler is the same before and after."""
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
