"""What a hunt gives: one scenario file per world found, a summary table, a JSON object."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import textwrap
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from platform_testbed.sim.config.scenario import validate
from platform_testbed.sim.config.settings import BadInput
from platform_testbed.sim.config.truth import label as truth_label
from platform_testbed.sim.config.truth import rule as truth_rule
from platform_testbed.sim.hunt.search import WRONG, Found, HuntResult
from platform_testbed.sim.hunt.space import ASSUMED, changes, changes_text, lookup, shown
from platform_testbed.sim.runtime.outputs import check_output, write_atomic
from platform_testbed.sim.show.table import Table, command, fit, width, wrap

#: The scenario's tables, in the order a scenario file is usually written.
TABLES = ("platform", "previous", "release", "check", "publish", "reconciler", "traffic", "api")


#: The first line of every file a hunt writes (``scenario_toml``): how an earlier find is known.
FOUND_MARK = "# Found by: testbed hunt"


def earlier_finds(path: Path) -> list[Path]:
    """The files an earlier hunt wrote into ``path`` (``.toml`` files opening with FOUND_MARK)."""
    found = []
    for file in sorted(path.glob("*.toml")):
        try:
            with file.open(encoding="utf-8", errors="replace") as handle:
                first = handle.readline(len(FOUND_MARK) + 1)
        except OSError:
            continue
        if first.startswith(FOUND_MARK):
            found.append(file)
    return found


def check_out_dir(given: str | Path, force: bool = False) -> None:
    """Refuse an output folder before any work is done: it must be (or become) a writable folder.

    An empty path is refused (it would mean the current folder, unasked); so is a folder
    holding an earlier hunt's files unless ``force``: the new finds would sit beside them,
    and a reader could not tell which hunt wrote which.
    """
    if not str(given).strip():  # Path("") is ".": judged on the text as given
        raise BadInput("--out: must name a folder (got an empty path); write --out . for "
                       "the current folder")
    path = Path(given)
    if path.exists() and not path.is_dir():
        raise BadInput(f"--out {path}: is a file; it must be a folder (created if missing)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BadInput(f"--out {path}: cannot create the folder ({error.strerror})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise BadInput(f"--out {path}: the folder is not writable")
    earlier = earlier_finds(path)
    if earlier and not force:
        raise BadInput(f"--out {path}: holds {len(earlier)} file(s) of an earlier hunt "
                       f"({earlier[0].name}, ...); give another folder, or --force to write beside them")


def file_names(result: HuntResult) -> list[str]:
    """``<check>-<outcome>-<n>.toml`` for each world found, n counting per outcome from 1."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", result.check)
    seen: dict[str, int] = {}
    names = []
    for found in result.found:
        seen[found.outcome] = seen.get(found.outcome, 0) + 1
        names.append(f"{stem}-{found.outcome}-{seen[found.outcome]}.toml")
    return names


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    # A JSON string is a TOML basic string for the text a scenario holds.
    return json.dumps(str(value), ensure_ascii=False)


def describe(result: HuntResult, found: Found) -> str:
    """The file's description: what the check did, why, what changed and what is assumed."""
    base = result.base
    diff = changes_text(base, found.world, " = ") or "nothing (the base itself)"
    bad = truth_rule(base.truth, base.truth_window_s).removeprefix("bad if ")
    wrong = {
        "missed": f"passes a bad release (missed; the truth {base.truth!r}: {bad})",
        "false_alarm": f"fails a good release (false_alarm; the truth {base.truth!r}: bad "
                       f"if {bad})",
        "undecided": "gives no verdict (undecided)",
        "error": "fails to run (error)",
    }[found.outcome]
    return (
        f"Found by testbed hunt (seed {result.seed}): {result.check} {wrong}: {found.why}. "
        f"Changed from {base.name}: {diff}. Chosen by the hunt from lists of round values, "
        f"not measured; not public for Fly, so assumed: {', '.join(ASSUMED)} "
        "(the project's docs/fidelity.md)."
    )


def _description_toml(text: str) -> str:
    # A multi-line string whose line-ending backslashes join the lines again: readable
    # lines in the file, one line for `testbed list`.
    safe = text.replace("\\", "\\\\").replace('"', '\\"')
    lines = textwrap.wrap(safe, 86, break_long_words=False, break_on_hyphens=False)
    return '"""' + " \\\n".join(lines) + '"""'


def scenario_toml(result: HuntResult, found: Found, name: str, check_arg: str) -> str:
    """One found world as a scenario file; ``testbed compare`` on it reproduces the outcome."""
    description = describe(result, found)
    scenario = found.scenario.model_copy(
        update={"name": name, "description": description, "expect": {result.check: found.outcome}}
    )
    base = result.base
    hunted = {key for key, _ in found.world}
    lines = [
        f"{FOUND_MARK} {check_arg} --scenario {base.name} --seed {result.seed} "
        f"--budget {result.budget}",
        f"# Reproduce: testbed compare {name}.toml {check_arg}",
        f"name = {_toml_value(name)}",
        f"description = {_description_toml(description)}",
        f"seed = {scenario.seed}",
        f"horizon_s = {_toml_value(scenario.horizon_s)}",
    ]
    # The truth that judged the world, when it is not the default: the file must say it.
    defaults = type(scenario).model_fields
    for key in ("truth", "truth_window_s"):
        if getattr(scenario, key) != defaults[key].default:
            lines.append(f"{key} = {_toml_value(getattr(scenario, key))}")
    for table in TABLES:
        section = getattr(scenario, table)
        if section is None:
            continue
        defaults = type(section)()
        body = []
        for field, value in section.model_dump().items():
            key = f"{table}.{field}"
            if value == getattr(defaults, field) and key not in hunted:
                continue
            line = f"{field} = {_toml_value(value)}"
            if key in hunted and lookup(base, key) != value:
                line += f"  # hunted ({base.name}: {shown(lookup(base, key))})"
            body.append(line)
        # An empty [previous] still says "there is a previous release"; other empty tables go.
        if body or table == "previous":
            lines += ["", f"[{table}]", *body]
    key = result.check if re.fullmatch(r"[A-Za-z0-9_-]+", result.check) else json.dumps(result.check)
    lines += ["", "[expect]", f"{key} = {_toml_value(found.outcome)}", ""]
    text = "\n".join(lines)
    # The file must say exactly this world: read it back as `testbed compare` would.
    again = validate(tomllib.loads(text), name)
    if again != scenario:
        raise AssertionError(f"hunt: {name} does not read back as the world found")
    return text


def _writer(text: str) -> Callable[[IO[str]], None]:
    def write(handle: IO[str]) -> None:
        handle.write(text)

    return write


def write_found(result: HuntResult, out: Path, check_arg: str) -> list[Path]:
    """Write every world found into ``out``; return the paths, in the order found.

    Each file is written whole or not at all, with the umask's permissions
    (``sim.runtime.outputs.write_atomic``). The names are known only now: each is judged before
    the first file is written (a directory or a link in the way is one line, not a
    traceback, and the link is not replaced).
    """
    paths = [out / name for name in file_names(result)]
    for path in paths:
        check_output("--out", path)
    for found, path in zip(result.found, paths, strict=True):
        write_atomic(path, _writer(scenario_toml(result, found, path.stem, check_arg)),
                     newline="\n")
    return paths


def summary(result: HuntResult, paths: list[Path]) -> dict[str, Any]:
    """The hunt as one JSON-ready object (what ``--json`` prints)."""
    return {
        "check": result.check,
        "scenario": result.base.name,
        "seed": result.seed,
        "budget": result.budget,
        "truth": result.base.truth,
        "truth_rule": truth_rule(result.base.truth, result.base.truth_window_s),
        "worlds_tried": result.worlds_tried,
        "rounds": result.rounds,
        "summary": {o: sum(f.outcome == o for f in result.found) for o in WRONG},
        "found": [
            {
                "file": str(path),
                "outcome": f.outcome,
                "kind": f.diagnosis,
                "why": f.why,
                "reason": f.reason,
                "decided_at_s": f.decided_at_s,
                "changes": dict(changes(result.base, f.world)),
            }
            for f, path in zip(result.found, paths, strict=True)
        ],
    }


def table(result: HuntResult, paths: list[Path], check_arg: str, at: int | None = None) -> str:
    """The summary for a person: one row per world found, then the counts by outcome."""
    at = width() if at is None else at
    head = wrap(
        f"hunt {result.check} · base {result.base.name} · seed {result.seed} · budget "
        f"{result.budget} · {result.worlds_tried} worlds tried in {result.rounds} rounds · "
        f"truth {truth_label(result.base.truth, result.base.truth_window_s)}", at)
    if not result.found:
        return "\n".join([*head, "", *wrap(
            f"no world fooled {result.check}: every verdict matched the ground truth", at)])
    rows = []
    for f, path in zip(result.found, paths, strict=True):
        diff = changes_text(result.base, f.world) or "(the base)"
        rows.append([f.outcome, f.diagnosis, diff, str(path)])
    found = Table(["outcome", "kind", "changed from the base", "file"], rows, prose=frozenset({2}))
    counts = " · ".join(f"{o} {sum(f.outcome == o for f in result.found)}" for o in WRONG)
    # --timeline only where it can be drawn: without matplotlib it is exit 2 (the plot extra).
    timeline = f" --timeline {paths[0].stem}.png" if importlib.util.find_spec("matplotlib") else ""
    again = f"testbed compare {paths[0]} {check_arg}{timeline}"
    one_line = f"reproduce one: {again}"
    return "\n".join([
        *head, "", fit(found, at), "", *wrap(f"by outcome: {counts}", at),
        *([one_line] if len(one_line) <= at else ["reproduce one:", *command(again, at)]),
    ])
