"""Checks by name: the built-ins, or a user's object given as ``package.module:name``."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import inspect
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from checks import BUILTIN_CHECKS, Check, make_check
from sim import checkcmd
from sim.scenario import BadInput


def _import(module_name: str) -> ModuleType:
    """A module by dotted name, or a ``.py`` file by path (no package needed)."""
    if not module_name.endswith(".py"):
        return importlib.import_module(module_name)
    path = Path(module_name)
    if not path.is_file():
        raise FileNotFoundError(f"no such file {module_name}")
    spec = importlib.util.spec_from_file_location(f"testbed_user_check_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {module_name}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _user_check(spec: str, options: Mapping[str, Any], extra: Mapping[str, Any]) -> Check:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise BadInput(
            f"--check {spec!r}: expected a built-in name, package.module:name or path/to/file.py:name"
        )
    try:
        module = _import(module_name)
    except Exception as error:  # any import-time failure of user code is bad input
        raise BadInput(f"--check {spec}: cannot import {module_name} ({error})") from None
    target = getattr(module, attr, None)
    if target is None:
        raise BadInput(f"--check {spec}: {module_name} has no attribute {attr!r}")
    if inspect.isclass(target):
        # A class gets the scenario's timing it declares, then the user's --check-opt values.
        fields = (
            {f.name for f in dataclasses.fields(target)}
            if dataclasses.is_dataclass(target)
            else set(inspect.signature(target).parameters)
        )
        kwargs = {k: v for k, v in options.items() if k in fields} | dict(extra)
        try:
            target = target(**kwargs)
        except Exception as error:
            raise BadInput(f"--check {spec}: cannot build it ({error})") from None
    elif extra:
        raise BadInput(f"--check-opt given, but {spec} is an object, not a class")
    if not callable(getattr(target, "next", None)):
        raise BadInput(f"--check {spec}: has no next(publish_started_ms, looks) method")
    if not isinstance(getattr(target, "name", None), str):
        with contextlib.suppress(AttributeError):
            setattr(target, "name", attr)  # noqa: B010 -- target is an arbitrary user object
    check: Check = target  # type: ignore[assignment]  # it has next(): checked above
    return check


def load_checks(
    names: list[str], options: Mapping[str, Any], extra: Mapping[str, Any] | None = None
) -> list[Check]:
    """Build the named checks (default: every built-in) with the scenario's [check] options."""
    built: list[Check] = []
    for name in names or list(BUILTIN_CHECKS):
        if name in BUILTIN_CHECKS:
            built.append(make_check(name, options))
        elif name.startswith(checkcmd.SPEC_PREFIX):
            # A check in another language gets the same timing, plus --check-opt, per request.
            built.append(checkcmd.parse_spec(name).build({**options, **(extra or {})}))
        elif ":" in name:
            built.append(_user_check(name, options, extra or {}))
        else:
            known = ", ".join(BUILTIN_CHECKS)
            raise BadInput(f"--check {name!r}: unknown check (built-in: {known})")
    return built
