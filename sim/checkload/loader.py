"""Checks by name: the built-ins, or a user's object given as ``package.module:name``.

Where a check's options come from, lowest first (``docs``: README "Check options"):

1. the check's own default (the field's default on the class);
2. the scenario's ``[check]`` table, for each key the scenario SETS (in the file or by
   ``--set check.KEY=…``) and the check declares as a field; a key the scenario leaves
   out never reaches a check, so a user check declaring ``poll_s = 5`` runs at 5 s
   (the table's own defaults are the built-ins' defaults, a test pins that);
3. ``--check-opt KEY=VALUE`` for every chosen check that declares ``KEY``
   (``--check-opt NAME.KEY=VALUE`` for check ``NAME`` alone); an option no chosen check
   declares, or a value of the wrong type, is bad input.

A ``cmd:`` check declares no fields: it gets the whole ``[check]`` table and every
``--check-opt`` in each request, as the check protocol says.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import math
import os
import sys
import typing
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter, ValidationError

from platform_testbed.checks import BUILTIN_CHECKS, Check
from platform_testbed.checks.drive import check_name
from platform_testbed.checks.options import Range, declared_range, problem
from platform_testbed.sim.config.rules import did_you_mean
from platform_testbed.sim.config.scenario import BadInput

Source = Literal["default", "scenario", "recording", "--check-opt"]
_NO_DEFAULT = object()


def _plain(value: Any) -> Any:
    """``value`` if JSON holds it as it is, else its repr."""
    return value if value is None or isinstance(value, str | int | float | bool) else repr(value)


@dataclass(frozen=True, slots=True)
class CheckOption:
    """One option a check ran with, and where its value came from."""

    key: str
    value: Any
    source: Source


@dataclass(frozen=True, slots=True)
class CheckSetup:
    """How one check was built: its name, how it was asked for, its options."""

    name: str
    spec: str
    options: tuple[CheckOption, ...]

    def to_json(self) -> dict[str, Any]:
        """``{key: {"value", "source"}}``, in field order (a value JSON cannot hold: its repr)."""
        return {o.key: {"value": _plain(o.value), "source": o.source} for o in self.options}

    def values(self) -> dict[str, Any]:
        """The options as ``{key: value}``, those JSON can hold (for a recording)."""
        return {o.key: o.value for o in self.options if _plain(o.value) is o.value}

    def describe(self) -> str:
        """``key=value (source), …`` on one line, or a word when it has none."""
        if not self.options:
            return "no options"
        return ", ".join(f"{o.key}={o.value!r} ({o.source})" for o in self.options)


@dataclass(frozen=True, slots=True)
class LoadedCheck:
    """A built check and how it was built."""

    check: Check
    setup: CheckSetup


@dataclass(frozen=True, slots=True)
class ScenarioOptions:
    """A scenario's ``[check]`` table: every value (for ``cmd:`` checks) and those it set."""

    values: Mapping[str, Any]
    explicit: frozenset[str]
    #: What to call a value from here: ``scenario``, or ``recording`` in a replay.
    source: Source = "scenario"

    @classmethod
    def of(cls, table: BaseModel | Mapping[str, Any], source: Source = "scenario") -> ScenarioOptions:
        """From a validated ``[check]`` table (its set keys), or a mapping (all of it set)."""
        if isinstance(table, BaseModel):
            return cls(MappingProxyType(table.model_dump()), frozenset(table.model_fields_set),
                       source)
        return cls(MappingProxyType(dict(table)), frozenset(table), source)


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    default: Any
    hint: Any
    #: The range the check declares for it (``checks.options``), checked before any run.
    rule: Range | None = None


@dataclass(frozen=True, slots=True)
class _Target:
    """What a check-list entry names, before it is built."""

    spec: str
    name: str
    fields: tuple[_Field, ...] | None  # None: takes any option (a cmd: check)
    build: Any  # Callable[[dict[str, Any]], Check]
    #: Where the spec was given, the start of its messages: ``--check``, or a file's
    #: field (``checks:``).
    door: str = "--check"


def _import(module_name: str) -> ModuleType:
    """A module by dotted name, or a ``.py`` file by path (no package needed).

    A dotted name is looked for in the current folder first, as ``python -m`` would: the
    ``testbed`` console script's ``sys.path`` starts at its own ``bin/`` folder, so a
    user's ``checks.mine`` in their project would otherwise be found only if installed.
    A file is run as ``python path/file.py`` runs it, its own folder first (so it imports
    the files beside it), and the current folder after (so it imports the project's
    packages, as the dotted form does). The folders are on the path for that import alone.
    """
    here = os.getcwd()
    if not module_name.endswith(".py"):
        if sys.path[:1] in ([""], [here]):
            return importlib.import_module(module_name)
        with _on_path(here):
            return importlib.import_module(module_name)
    path = Path(module_name)
    if not path.is_file():
        raise FileNotFoundError(f"no such file {module_name}")
    spec = importlib.util.spec_from_file_location(f"testbed_user_check_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {module_name}")
    module = importlib.util.module_from_spec(spec)
    with _on_path(str(path.resolve().parent), here):
        spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _on_path(*folders: str) -> Iterator[None]:
    """``folders`` first on ``sys.path`` for the block, then taken off again (the first
    occurrence of each: the one put there, even if the folder was on the path already)."""
    sys.path[:0] = folders
    try:
        yield
    finally:
        for folder in folders:
            with contextlib.suppress(ValueError):
                sys.path.remove(folder)


# Made once per class: get_type_hints and a field walk cost more than a sweep world's
# simulation (issue 22). A class's fields do not change while the process runs.
@functools.lru_cache(maxsize=256)
def _fields(cls: type[Any]) -> tuple[_Field, ...]:
    """A class's options: dataclass fields, else its constructor's keyword parameters."""
    try:
        hints = typing.get_type_hints(cls if dataclasses.is_dataclass(cls) else cls.__init__)
    except Exception:  # a hint that cannot be resolved: that field is not type-checked
        hints = {}
    if dataclasses.is_dataclass(cls):
        found = []
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            default = f.default
            if default is dataclasses.MISSING and f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            found.append(_Field(f.name, _NO_DEFAULT if default is dataclasses.MISSING else default,
                                hints.get(f.name), declared_range(f)))
        return tuple(found)
    params = inspect.signature(cls).parameters.values()
    return tuple(
        _Field(p.name, _NO_DEFAULT if p.default is p.empty else p.default, hints.get(p.name))
        for p in params
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    )


def _class_target(spec: str, cls: type[Any], name: str, door: str) -> _Target:
    def build(kwargs: dict[str, Any]) -> Check:
        try:
            made: Check = cls(**kwargs)
        except Exception as error:
            raise BadInput(f"{door} {spec}: cannot build it ({error})") from None
        return made

    declared = getattr(cls, "name", None)
    return _Target(spec, declared if isinstance(declared, str) and declared else name,
                   _fields(cls), build, door)  # type: ignore[arg-type]  # a class hashes


def _user_target(spec: str, door: str) -> _Target:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise BadInput(
            f"{door} {spec!r}: expected a built-in name, package.module:name or path/to/file.py:name"
        )
    try:
        module = _import(module_name)
    except Exception as error:  # any import-time failure of user code is bad input
        raise BadInput(f"{door} {spec}: cannot import {module_name} ({error})") from None
    target = getattr(module, attr, None)
    if target is None:
        raise BadInput(f"{door} {spec}: {module_name} has no attribute {attr!r}")
    if inspect.isclass(target):
        return _class_target(spec, target, attr, door)
    obj = target
    return _Target(spec, check_name(obj) if hasattr(obj, "name") else attr, (), lambda _: obj,
                   door)


def _target(spec: str, door: str) -> _Target:
    if spec in BUILTIN_CHECKS:
        return _class_target(spec, BUILTIN_CHECKS[spec], spec, door)
    from platform_testbed.sim import checkcmd  # noqa: PLC0415 -- past the built-ins: a child's code

    if spec.startswith(checkcmd.SPEC_PREFIX):
        command = checkcmd.parse_spec(spec)
        return _Target(spec, command.name, None, command.build, door)
    if ":" in spec:
        return _user_target(spec, door)
    known = ", ".join(BUILTIN_CHECKS)
    raise BadInput(f"{door} {spec!r}: unknown check{did_you_mean(spec, BUILTIN_CHECKS)} "
                   f"(built-in: {known})")


def _finish(target: _Target, check: Check) -> Check:
    if not callable(getattr(check, "next", None)):
        raise BadInput(f"{target.door} {target.spec}: has no next(publish_started_ms, looks) method")
    try:
        name = getattr(check, "name", None)
    except Exception:  # a broken name is the check's error, reported by the driver per run
        return check
    if not isinstance(name, str):
        with contextlib.suppress(AttributeError):
            setattr(check, "name", target.name)  # noqa: B010 -- an arbitrary user object
    return check


def _typed(target: _Target, item: _Field, value: Any, where: str) -> Any:
    """``value`` as the field's declared type, or BadInput.

    Strict, so ``"yes"`` is no bool and ``1.5`` no int; an int for a float is widened.
    """
    if item.hint is None:
        return value
    try:
        adapter = _adapter(item.hint)
    except Exception:  # a hint pydantic cannot check (an arbitrary class): taken as given
        return value
    try:
        typed = adapter.validate_python(value, strict=True)
    except ValidationError as error:
        rule = error.errors()[0]["msg"].rstrip(".").lower()
        raise BadInput(f"{where} {item.name}={value!r}: {target.name}.{item.name}: {rule}") from None
    if item.rule is not None and typed is not None:
        found = problem(target.name, item.name, item.rule, typed)
        if found is not None:
            raise BadInput(f"{where} {item.name}={value!r}: {found}")
    # Options are times and counts: inf or NaN would make a check wait forever or never judge.
    if isinstance(typed, float) and not math.isfinite(typed):
        raise BadInput(f"{where} {item.name}={value!r}: {target.name}.{item.name}: "
                       "must be a finite number")
    return typed


@functools.lru_cache(maxsize=256)
def _cached_adapter(hint: Any) -> TypeAdapter[Any]:
    return TypeAdapter(hint)


def _adapter(hint: Any) -> TypeAdapter[Any]:
    """A validator for ``hint``, built once per hint (building one compiles a schema)."""
    try:
        return _cached_adapter(hint)
    except TypeError:  # an unhashable hint: built each time, as before
        return TypeAdapter(hint)


#: The longest list of the chosen checks' options a message spells out (six checks' 26
#: fields made a 700-character line); past it, a count and one check's as an example.
_LISTED = 120


def _scoped(extra: Mapping[str, Any], targets: Sequence[_Target],
            where: str = "--check-opt") -> list[dict[str, Any]]:
    """Each target's ``--check-opt`` values; BadInput for an option nobody takes, with the
    nearest name there is (one line: never every check's every field)."""
    names = {t.name for t in targets}
    mine: list[dict[str, Any]] = [{} for _ in targets]

    def named(key: str) -> str:  # the flag's item, or the API's key (a parameter's, quoted)
        return f"options {key!r}" if where == "options" else f"{where} {key}"

    for key, value in extra.items():
        owner, dot, field = key.rpartition(".")
        if dot and owner not in names:
            raise BadInput(f"{named(key)}: no chosen check is named {owner!r}"
                           f"{did_you_mean(owner, names)} (chosen: {', '.join(sorted(names))})")
        chosen = [i for i, t in enumerate(targets) if not dot or t.name == owner]
        takers = [i for i in chosen
                  if targets[i].fields is None or field in {f.name for f in targets[i].fields or ()}]
        if not takers:
            declared = sorted({f.name for i in chosen for f in targets[i].fields or ()})
            hint = did_you_mean(field, declared)
            near = hint.removeprefix(" (did you mean ").removesuffix("?)")
            who = [targets[i].name for i in chosen if near in {f.name for f in targets[i].fields or ()}]
            listed = "; ".join(f"{targets[i].name}: "
                               f"{', '.join(f.name for f in targets[i].fields or ()) or 'none'}"
                               for i in chosen)
            first = next((targets[i] for i in chosen if targets[i].fields), None)
            example = "" if first is None else (
                f", e.g. {first.name}: {', '.join(f.name for f in first.fields or ())}")
            said = (f"{hint[:-1]}; {', '.join(who)} take{'s' if len(who) == 1 else ''} it)" if hint else
                    f" ({listed})" if len(listed) <= _LISTED else
                    f" ({len(declared)} options in all, each a field of its check{example})")
            raise BadInput(f"{named(field)}: no chosen check has this option{said}")
        for i in takers:
            mine[i][field] = value
    return mine


def _build(target: _Target, scenario: ScenarioOptions, extra: Mapping[str, Any]) -> LoadedCheck:
    if target.fields is None:  # a cmd: check: the whole table and every option, per request
        values = {**scenario.values, **extra}
        options = tuple(
            CheckOption(k, v, "--check-opt" if k in extra
                        else scenario.source if k in scenario.explicit else "default")
            for k, v in values.items()
        )
        return LoadedCheck(_finish(target, target.build(values)),
                           CheckSetup(target.name, target.spec, options))
    kwargs: dict[str, Any] = {}
    options_list = []
    where = "[check]" if scenario.source == "scenario" else "recorded check_options"
    for item in target.fields:
        source: Source
        if item.name in extra:
            value, source = _typed(target, item, extra[item.name], "--check-opt"), "--check-opt"
        elif item.name in scenario.explicit and item.name in scenario.values:
            value = _typed(target, item, scenario.values[item.name], where)
            source = scenario.source
        else:
            if item.default is not _NO_DEFAULT:
                options_list.append(CheckOption(item.name, item.default, "default"))
            continue
        kwargs[item.name] = value
        options_list.append(CheckOption(item.name, value, source))
    check = _finish(target, target.build(kwargs))
    return LoadedCheck(check, CheckSetup(check_name(check), target.spec, tuple(options_list)))


def build_checks(
    names: Sequence[str],
    scenario: BaseModel | Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
    source: Source = "scenario",
    door: str = "--check",
) -> list[LoadedCheck]:
    """Build the named checks (default: every built-in) and say which options each got.

    ``scenario`` is the ``[check]`` table (validated: only its set keys apply; a plain
    mapping: all of it). Two checks with the same name are bad input: results are keyed
    by name. ``door`` is where the names were given, as a bad one's message starts
    (``--check``, or a sweep file's ``checks:``).
    """
    table = ScenarioOptions.of(scenario, source)
    key = _built_key(names, table, extra or {}, door)
    if key is not None:
        return list(_built_builtins(key))
    return _build_all(names, table, extra or {}, door)


def _built_key(names: Sequence[str], table: ScenarioOptions,
               extra: Mapping[str, Any], door: str) -> tuple[Any, ...] | None:
    """What decides the built-ins a list builds (their specs, the options they get), or None.

    Only built-ins are kept: a user's object or command is built as asked each time. A
    value's type is in the key, so ``1``, ``1.0`` and ``True`` (equal in Python) are
    judged apart.
    """
    specs = tuple(names or BUILTIN_CHECKS)
    if not all(spec in BUILTIN_CHECKS for spec in specs):
        return None
    set_keys = tuple((k, type(table.values[k]), table.values[k])
                     for k in sorted(table.explicit) if k in table.values)
    key = (specs, set_keys, tuple((k, type(v), v) for k, v in extra.items()),
           table.source, door)
    try:
        hash(key)
    except TypeError:  # a list or table as a value: not kept
        return None
    return key


# A sweep asks for the same checks with the same [check] table in every world: the
# built checks (pure decision procedures, LookMemo per thread) are made once per
# process for each distinct ask (issue 22: building them was a third of a world).
@functools.lru_cache(maxsize=1024)
def _built_builtins(key: tuple[Any, ...]) -> tuple[LoadedCheck, ...]:
    specs, set_keys, extra, source, door = key
    # A built-in takes only the keys a table sets: the key holds all it needs.
    table = ScenarioOptions(MappingProxyType({k: v for k, _, v in set_keys}),
                            frozenset(k for k, _, _ in set_keys), source)
    return tuple(_build_all(specs, table, {k: v for k, _, v in extra}, door))


def _build_all(names: Sequence[str], table: ScenarioOptions,
               extra: Mapping[str, Any], door: str) -> list[LoadedCheck]:
    targets = [_target(spec, door) for spec in names or list(BUILTIN_CHECKS)]
    built = [
        _build(t, table, mine)
        for t, mine in zip(targets, _scoped(extra or {}, targets, _options_door(door)), strict=True)
    ]
    seen: dict[str, str] = {}
    for loaded in built:
        name = loaded.setup.name
        if name in seen:
            raise BadInput(f"{door} {loaded.setup.spec}: another chosen check "
                           f"({seen[name]}) is also named {name!r}; names must differ")
        seen[name] = loaded.setup.spec
    return built


def _options_door(door: str) -> str:
    """Where the options came from, named as the check names' door names its list: the
    command line's ``--check-opt``, or the API's ``options`` (``door`` ``checks``)."""
    return "options" if door == "checks" else "--check-opt"


def load_checks(
    names: Sequence[str],
    options: BaseModel | Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
    door: str = "--check",
) -> list[Check]:
    """Build the named checks (default: every built-in); see ``build_checks``."""
    return [loaded.check for loaded in build_checks(names, options, extra, door=door)]


def setups(loaded: Collection[LoadedCheck]) -> tuple[CheckSetup, ...]:
    """The setups of built checks, in order."""
    return tuple(item.setup for item in loaded)
