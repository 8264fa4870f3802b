"""Every option and limit of the testbed, each stated once: name, flag, variable, default, range, help.

The command line builds its flags from these entries (``add``), the Python API names its
parameters and reads its limits by them, and ``docs/options.md`` is printed from them
(``python -m platform_testbed.sim.config.options``; a test keeps the page current).

One naming: an entry's ``name`` is the Python API's parameter (``check_timeout_s``); its
environment variable, where it has one, is ``TESTBED_`` and the name in capitals
(``TESTBED_CHECK_TIMEOUT_S``); its flag is the name without its unit, with hyphens
(``--check-timeout``). One precedence rule for every value, ``resolve``: the flag (or the
API's parameter) > the environment variable > a file's value (a sweep file's seed, a
``cmd:`` entry's ``timeout_s``) > the default. Standard library only: the parser imports it.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Mapping
from numbers import Integral
from typing import Any, Literal, NamedTuple

from platform_testbed.sim.config.rules import (
    ENV_CEILING,
    BadInput,
    env_limit,
    env_number,
    seconds_rule,
    whole_rule,
)

__all__ = ["HUNT_SCENARIO", "MAX_SEED", "OPTIONS", "Option", "add", "limit", "markdown", "option", "resolve"]

#: What kind of value an entry holds, and so its rule: ``seconds`` (a finite number greater
#: than 0, at most ``most``), ``whole`` (1 to ``most``), ``seed`` (0 to ``MAX_SEED``),
#: ``factor`` (a number greater than 0, at most ``most``), ``port`` (0 to 65535), ``ms``
#: (a whole number of milliseconds, 0 or more), ``folder`` (an existing folder).
Kind = Literal["seconds", "whole", "seed", "factor", "port", "ms", "folder"]
Number = int | float

#: The largest seed: a run's seed is a row of the ``to_pandas()`` tables, whose ``seed``
#: column is a nullable Int64 (sim.runtime.frames.INT); a larger one turns it into objects.
MAX_SEED = 2**63 - 1
#: The base world ``testbed hunt`` and ``api.hunt`` search around when none is named.
HUNT_SCENARIO = "sept25-crash-loop"
_TYPES: dict[str, type] = {"seconds": float, "factor": float, "whole": int, "seed": int,
                           "port": int, "ms": int, "folder": str}


class Option(NamedTuple):  # not a dataclass: its import (inspect) cost --help 20 ms
    """One option or limit: where it may be given, its default, its range and what it does."""

    name: str
    help: str
    kind: Kind
    default: Number | None = None
    #: The upper bound, or the name of the limit entry that bounds it (``max_runs``).
    most: Number | str | None = None
    #: Give a flag (derived from the name unless a string), an environment variable?
    flag: str | bool = False
    env: str | bool = False
    metavar: str | None = None
    #: The commands whose parser takes the flag, and a default that differs on one of them.
    commands: tuple[str, ...] = ()
    defaults: tuple[tuple[str, Number], ...] = ()
    #: What the default means when it is not a number (``the scenario's seed``).
    default_text: str | None = None
    #: The file field that may set it (the third layer of the precedence rule).
    file: str | None = None
    #: Where the default or bound comes from: a public source, or "not public: assumed".
    source: str = ""

    @property
    def flag_name(self) -> str | None:
        """``--check-timeout`` for ``check_timeout_s``: the name without its unit, hyphenated."""
        if isinstance(self.flag, str):
            return self.flag
        return "--" + self.name.removesuffix("_s").replace("_", "-") if self.flag else None

    @property
    def env_name(self) -> str | None:
        """``TESTBED_CHECK_TIMEOUT_S`` for ``check_timeout_s``."""
        if isinstance(self.env, str):
            return self.env
        return f"TESTBED_{self.name.upper()}" if self.env else None

    @property
    def dest(self) -> str:
        """The attribute argparse stores the flag's value under."""
        return (self.flag_name or self.name).lstrip("-").replace("-", "_")

    def default_for(self, command: str | None = None) -> Number | None:
        """The default, on ``command`` if it has its own."""
        return dict(self.defaults).get(command or "", self.default)

    def bound(self, environ: Mapping[str, str] = os.environ) -> Number | None:
        """The upper bound now: a number, or the current value of the limit it names."""
        if isinstance(self.most, str):
            return limit(self.most, environ)
        return self.most

    def rule(self, environ: Mapping[str, str] | None = None) -> str:
        """The range in words (the bound of a limit entry as its default, unless ``environ``)."""
        most = self.bound(environ) if environ is not None else (
            option(self.most).default if isinstance(self.most, str) else self.most)
        if self.kind == "seconds":
            return f"seconds, more than 0, at most {most:,g}" if most else "seconds, more than 0"
        if self.kind == "factor":
            return f"more than 0, at most {most:,g}"
        if self.kind == "whole":
            return f"a whole number from 1 to {most or ENV_CEILING:,}"
        if self.kind == "seed":
            return "a whole number from 0 to 2**63 - 1"
        if self.kind == "port":
            return "0 to 65535 (0: any free port)"
        if self.kind == "folder":
            return "an existing folder"
        return "whole milliseconds, 0 or more"

    def check(self, where: str, value: object, environ: Mapping[str, str] = os.environ) -> Any:
        """``value`` by this entry's rule, or ``BadInput`` naming ``where`` and the rule."""
        most = self.bound(environ)
        if self.kind == "seconds":
            return seconds_rule(where, value, float(most) if most is not None else math.inf)
        if self.kind == "whole":
            whole = _as_int(value)
            if isinstance(self.most, str) and whole is not None and whole < 1:
                raise BadInput(f"{where}: must be at least 1 (got {whole:,})")
            if isinstance(self.most, str) and whole is not None and whole > (most or 0):
                raise BadInput(f"{where}: must be at most {most:,} (got {whole:,}); set "
                               f"{option(self.most).env_name} to raise the limit")
            return whole_rule(where, value, int(most) if most is not None else ENV_CEILING)
        if self.kind == "factor":
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                    math.isfinite(value) and 0 < value <= (most or math.inf)):
                raise BadInput(f"{where}: must be more than 0 and at most {most:g} (got {value})")
            return float(value)
        if self.kind == "folder":
            if not isinstance(value, str) or not os.path.isdir(value):
                raise BadInput(f"{where}: must be an existing folder (got {value!r})")
            return value
        low, high = {"seed": (0, MAX_SEED), "port": (0, 65535), "ms": (0, ENV_CEILING)}[self.kind]
        whole = _as_int(value)
        if whole is None or not low <= whole <= high:
            words = "0 or more" if whole is not None and whole < 0 else self.rule()
            raise BadInput(f"{where}: must be {words} (got {value})")
        return whole

    def from_env(self, environ: Mapping[str, str] = os.environ) -> Any:
        """The environment variable's value by this entry's rule, or None when it is unset."""
        name = self.env_name
        if name is None or not environ.get(name, "").strip():
            return None
        if self.kind == "folder":
            return self.check(name, environ[name], environ)
        most = self.bound(environ)
        if self.kind == "seconds":
            return env_number(name, 0.0, float(most) if most is not None else math.inf, environ)
        if most is None or isinstance(self.most, str) or self.kind != "whole":
            value = env_limit(name, 0, environ)  # 1 to ENV_CEILING, ``_`` separators allowed
            return self.check(name, value, environ) if most is not None else value
        text = environ[name].strip().replace("_", "")
        # ASCII only: "²".isdigit() is true but int("²") fails, and int() reads "٣" as 3.
        if not (text.isascii() and text.isdigit() and 1 <= int(text) <= most):
            raise BadInput(f"{name}: must be a whole number from 1 to {most:,} (got {environ[name]!r})")
        return int(text)

    def help_text(self, command: str | None = None) -> str:
        """The flag's help: what it does, its default, its range and its variable."""
        default = self.default_for(command)
        said = self.default_text if default is None else f"{default:,g}"
        parts = [f"default {said}" if said else "", self.rule()]
        if isinstance(self.most, str):
            parts[-1] += f" ({option(self.most).env_name} raises it)"
        if self.env_name:
            parts.append(f"env {self.env_name}")
        return f"{self.help} ({'; '.join(p for p in parts if p)})"


def _as_int(value: object) -> int | None:
    """A whole number (numpy's too, not a bool) as an int, else None."""
    return int(value) if not isinstance(value, bool) and isinstance(value, Integral) else None


_ENTRIES = (
    # --- the three timeouts: one naming, one rule (flag > env > file > default) ---
    Option("check_timeout_s", "wall-clock seconds a check of yours may take to answer one look "
           "before its run ends as error", "seconds", 10.0, 86_400.0, flag=True, env=True,
           metavar="SECONDS", commands=("compare", "replay", "checks", "series", "sweep", "hunt"),
           source="assumed: every built-in answers a look in well under a millisecond, a "
           "thousand-machine look in under a second; at most a day (1e300 overflowed the timer)"),
    Option("check_cmd_timeout_s", "the most one answer of a --check-cmd check may take before "
           "the run's outcome is error", "seconds", 5.0, 3600.0, flag=True, env=True,
           metavar="SECONDS", commands=("compare", "replay", "checks", "hunt"),
           file="a check list's cmd:{...\"timeout_s\": S} entry",
           source="assumed: a child answering a look in 5 s is stuck, not slow"),
    Option("http_timeout_s", "the most wall seconds a --check-http/--deploy-cmd process may run "
           "in one world before it is killed and the run is an error", "seconds", 120.0,
           86_400.0, flag=True, env=True, metavar="SECONDS",
           commands=("compare", "checks", "sweep", "hunt"),
           source="assumed: the incident's check needs ~25 s at speed 1 (a start, two 10 s "
           "looks), a flyctl-style wait at most 60 s more"),
    # --- options of the commands ---
    Option("max_looks", "looks a check may ask for without deciding before its run ends as "
           "error", "whole", 10_000, flag=True, env=True, metavar="N",
           commands=("compare", "replay", "checks", "series", "sweep", "hunt"),
           source="the driver's own default (checks/drive.py MAX_LOOKS, which checks/ keeps "
           "so a deploy tool can vendor it; a test holds the two equal)"),
    Option("seed", "the first world's seed", "seed", None, flag=True, metavar="N",
           commands=("compare", "checks", "sweep", "rollout", "serve"),
           default_text="the scenario's (a sweep: the file's first_seed, else the scenario's)",
           file="a scenario's seed, a sweep file's first_seed"),
    Option("search_seed", "hypothesis' seed: the same seed finds and writes the same worlds",
           "seed", 0, flag="--seed", metavar="K", commands=("hunt",)),
    Option("runs", "run N seeds: SEED ... SEED+N-1", "whole", 1, "max_runs", flag=True,
           metavar="N", commands=("compare", "checks"), defaults=(("checks", 10),)),
    Option("rollout_runs", "runs with seeds SEED, SEED+1, ...", "whole", 1, "max_rollout_runs",
           flag="--runs", metavar="N", commands=("rollout",)),
    Option("workers", "local worker processes (1: no pool); the output is the same", "whole",
           None, "max_workers", flag=True, metavar="N",
           commands=("compare", "checks", "sweep", "region"),
           default_text="one per core (compare and checks: from 1,000 runs, else 1)"),
    Option("budget", "worlds tried per search round; a hunt runs one round per kind found, "
           "plus one", "whole", 200, 100_000, flag=True, metavar="N", commands=("hunt",),
           source="measured: enough, on the shipped scenarios, for each built-in check's "
           "blind spots around the base (README 'Hunting'); past 100,000 a sweep is the tool"),
    Option("speed", "simulated seconds per wall second while a real process runs (1: the "
           "platform's timestamps are wall time; the rest of each world runs instantly); on "
           "compare, checks, sweep and hunt it means --time scaled", "factor", 1.0, 10_000.0,
           flag=True, metavar="K", commands=("compare", "checks", "sweep", "hunt", "serve"),
           source="assumed: past 10,000 a world answers waits faster than curl starts"),
    Option("port", "port on 127.0.0.1", "port", 0, flag=True, metavar="PORT", commands=("serve",)),
    Option("horizon_s", "end the world at S simulated seconds", "seconds", None, flag="--horizon-s",
           metavar="S", commands=("serve",), default_text="the scenario's horizon"),
    Option("at_ms", "raw payload only: the look's time", "ms", None, flag=True, metavar="MS",
           commands=("replay",), default_text="its newest event timestamp"),
    Option("publish_ms", "raw payload only: when the publish began", "ms", None, flag=True,
           metavar="MS", commands=("replay",), default_text="its newest launch/update event"),
    # --- limits: how much one run may ask for; a variable raises each, where one may ---
    Option("max_runs", "the most seeds one compare or checks (or api.compare) runs", "whole",
           1_000_000, env=True,
           source="assumed: at about 5 ms a world with six checks, a million is hours; more "
           "is a typo (--runs 1000000000)"),
    Option("max_rollout_runs", "the most runs one rollout (or api.rollout) runs: every run is "
           "kept for its table", "whole", 100_000, source="assumed: a cap for typos "
           "(--runs 1000000), not a limit of the model"),
    Option("max_workers", "the most local worker processes", "whole", 256, env=True,
           source="assumed: each holds a simulator (tens of MB); past a few per core they "
           "only contend"),
    Option("max_sweep_points", "the most worlds one sweep runs (points x seeds)", "whole",
           1_000_000, env=True, source="the shipped sweeps run 10,000 and 12,500; a million "
           "takes hours on a laptop"),
    Option("max_file_bytes", "the largest settings or recording file read whole (bytes)",
           "whole", 256 * 1024 * 1024, env=True,
           source="assumed: far above any real one; keeps /dev/zero from filling memory"),
    Option("max_rollout_events", "the most simulated events one rollout run may be estimated "
           "to take", "whole", 5_000_000, env=True,
           source="measured on a 2-core machine: 250,000 to 450,000 events a second, so 10 to "
           "20 s of one core; every shipped rollout takes under 10,000"),
    Option("max_process_wall_s", "the most wall time a command line's real processes may take "
           "at worst (worlds x processes x --http-timeout), seconds", "whole", 6 * 3600, env=True,
           source="the limit GitHub Actions puts on one job: 'Each job in a workflow can run "
           "for up to 6 hours of execution time' (docs.github.com, Actions usage limits)"),
    Option("min_period_s", "the shortest crash or flap period a world runs", "seconds", 0.001,
           60.0, env=True, source="assumed: no app crashes faster than a process can start; "
           "below it a run's events grow without useful bound"),
    Option("scenarios", "a folder of scenario files read in place of the shipped ones (its "
           "sweeps/, series/ and rollouts/ too)", "folder", env=True, default_text="the shipped ones"),
)

#: Every entry by name: the one place an option's flag, variable, default and range live.
OPTIONS: dict[str, Option] = {entry.name: entry for entry in _ENTRIES}


def option(name: str) -> Option:
    """The entry called ``name``."""
    return OPTIONS[name]


def limit(name: str, environ: Mapping[str, str] = os.environ) -> int:
    """A limit entry's value now: its variable if set (by its rule), else its default."""
    entry = OPTIONS[name]
    found = entry.from_env(environ)
    return int(entry.default if found is None else found)  # type: ignore[arg-type]


def resolve(name: str, given: object = None, *, where: str | None = None,
            environ: Mapping[str, str] = os.environ, file_value: object = None,
            file_where: str | None = None, command: str | None = None) -> Any:
    """The value by the one precedence rule: ``given`` (a flag's or a parameter's, named by
    ``where``) > the environment variable > ``file_value`` (named by ``file_where``) > the
    default (``command``'s own, if it has one). Each layer is judged by the entry's rule."""
    entry = OPTIONS[name]
    if given is not None:
        return entry.check(where or entry.name, given, environ)
    found = entry.from_env(environ)
    if found is not None:
        return found
    if file_value is not None:
        return entry.check(file_where or entry.name, file_value, environ)
    return entry.default_for(command)


def from_args(name: str, args: argparse.Namespace, *, command: str | None = None,
              file_value: object = None, file_where: str | None = None,
              environ: Mapping[str, str] = os.environ) -> Any:
    """``resolve`` for the command line: the flag's value, named by the flag."""
    entry = OPTIONS[name]
    return resolve(name, getattr(args, entry.dest, None), where=entry.flag_name,
                   environ=environ, file_value=file_value, file_where=file_where, command=command)


def add(parser: argparse.ArgumentParser | argparse._ArgumentGroup, name: str, command: str,
        **overrides: Any) -> argparse.Action:
    """Add entry ``name``'s flag to ``command``'s parser: its type, metavar and help from here.

    The stored default is None where a variable or a file may set the value (``from_args``
    decides), else the entry's default for ``command``.
    """
    entry = OPTIONS[name]
    if entry.flag_name is None or command not in entry.commands:
        raise ValueError(f"option {name!r} has no flag on {command!r}")  # a programming error
    layered = entry.env_name is not None or entry.file is not None or entry.default is None
    settings: dict[str, Any] = {
        "type": _TYPES[entry.kind], "metavar": entry.metavar,
        "default": None if layered else entry.default_for(command),
        "help": entry.help_text(command),
    } | overrides
    return parser.add_argument(entry.flag_name, dest=entry.dest, **settings)


def markdown() -> str:
    """docs/options.md: every entry as a row, limits apart (printed by ``python -m``)."""
    head = [
        "# Options and limits",
        "",
        "Generated from `sim/config/options.py` (`python -m platform_testbed.sim.config.options "
        "> docs/options.md`); `tests/test_options_registry.py` fails when this page is stale.",
        "",
        "One precedence rule for every value: the flag (or the Python API's parameter of the "
        "same name) > the environment variable > a file's value > the default. A value out of "
        "range is bad input wherever it is given (exit 2, one line naming the flag, the "
        "variable, the file's field or the parameter). The Python API names each by its "
        "`name`; its messages name parameters, not flags.",
        "",
    ]

    def cell(text: object) -> str:
        return str(text).replace("|", "\\|")

    rows = {"Options": [], "Limits": []}  # type: dict[str, list[str]]
    for entry in _ENTRIES:
        default = (entry.default_text or "") if entry.default is None else f"{entry.default:,g}"
        if entry.defaults:
            default += "; " + ", ".join(f"{c}: {v:,g}" for c, v in entry.defaults)
        flag = f"`{entry.flag_name}` ({', '.join(entry.commands)})" if entry.flag_name else ""
        env = f"`{entry.env_name}`" if entry.env_name else ""
        said = entry.help + (f"; a file: {entry.file}" if entry.file else "") + (
            f". Source: {entry.source}" if entry.source else "")
        group = "Options" if entry.flag_name else "Limits"
        rows[group].append(f"| `{entry.name}` | {cell(flag)} | {env} | {cell(default or '')} | "
                           f"{cell(entry.rule())} | {cell(said)} |")
    body: list[str] = []
    for title, lines in rows.items():
        body += [f"## {title}", "", "| name | flag (commands) | variable | default | range | what |",
                 "|---|---|---|---|---|---|", *lines, ""]
    return "\n".join(head + body)


if __name__ == "__main__":
    sys.stdout.write(markdown())
