"""Recording a run's looks as Fly Machines API JSON, and replaying recordings to checks.

``load_recordings`` reads either a JSON Lines recording or a raw API payload (one machine,
an array of machines, or ``{"machines": [...]}`` as ``GET /v1/apps/{app}/machines[/{id}]``
or ``fly machine status --json`` / ``fly m list --json`` print it). A payload is ONE look,
taken at the newest event timestamp (``--at-ms`` overrides), for a publish that began at the
newest ``launch``/``update`` event (``--publish-ms`` overrides); see ``checks.flyjson``.
"""

from __future__ import annotations

import json
import re
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platform_testbed.checks import Look, Verdict
from platform_testbed.checks.drive import CheckFailed
from platform_testbed.checks.flyjson import (
    Recording,
    RecordingError,
    is_recording_line,
    look_to_json,
    payload_recording,
    read_recordings,
    replay,
)
from platform_testbed.checks.protocol import prepare
from platform_testbed.sim.checkload.budget import DEFAULT_CHECK_BUDGET, CheckBudget
from platform_testbed.sim.checkload.loader import CheckSetup, build_checks
from platform_testbed.sim.config.scenario import BadInput
from platform_testbed.sim.config.settings import read_text
from platform_testbed.sim.publish.compare import SCHEMA_VERSION
from platform_testbed.sim.publish.world import RunResult
from platform_testbed.sim.runtime.outputs import check_output, write_atomic


class Recorder:
    """Collects the looks of every run as JSON Lines; ``save`` writes them atomically.

    Each run's ``check_options`` are the options its check ran with (``setups``), so a
    replay builds it the same way; a check with no setup gets ``check_options``.
    """

    def __init__(
        self,
        publish_started_ms: int,
        check_options: Mapping[str, Any],
        setups: Sequence[CheckSetup] = (),
    ) -> None:
        self.publish_started_ms = publish_started_ms
        self.check_options = dict(check_options)
        self.per_check = {s.name: s.values() for s in setups}
        self.lines: list[str] = []

    def __call__(self, result: RunResult) -> None:
        """Record one run's looks, labelled ``check/seed=N`` so a file can hold many runs."""
        label = f"{result.check}/seed={result.seed}"
        options = self.per_check.get(result.check, self.check_options)
        self.lines += [
            look_to_json(recorded.look, self.publish_started_ms, label, options)
            for recorded in result.looks
        ]

    def save(self, path: str, force: bool = False) -> None:
        """Write the file whole or not at all (temp file in the same folder, then rename)."""
        target = check_output("--record", Path(path), force)
        write_atomic(target, lambda out: out.writelines(line + "\n" for line in self.lines))


def load_recordings(
    path: str, at_ms: int | None = None, publish_ms: int | None = None
) -> list[Recording]:
    """Read a recording or a raw payload file, turning any problem into one line of bad input."""
    text = read_text(Path(path), "{path}: cannot read recording ({reason})")
    deep = f"{path}: not a recording (JSON nested too deeply: a look is a few levels deep)"
    try:
        whole: object = json.loads(text)
    except ValueError:
        whole = None  # several JSON Lines (or not JSON at all): read line by line below
    except RecursionError:
        raise BadInput(deep) from None
    payload = whole is not None and not is_recording_line(whole)
    if not payload and (at_ms is not None or publish_ms is not None):
        option = "--at-ms" if at_ms is not None else "--publish-ms"
        raise BadInput(f"{option}: only for a raw payload file; a recording carries its own times")
    try:
        if payload:
            recordings = [payload_recording(whole, at_ms, publish_ms)]
        else:
            # JSON Lines ends a line with \n, \r\n or (an old Mac's) \r alone, never U+2028: a
            # raw CR cannot be inside a JSON string, so it only ever ends a line.
            recordings = read_recordings(_LINE_END.split(text))
    except RecordingError as error:
        raise BadInput(f"{path}: {error}") from None
    except ValueError as error:  # JSON that is not JSON
        raise BadInput(f"{path}: not a recording ({error})") from None
    except RecursionError:  # json recurses per nested array or object
        raise BadInput(deep) from None
    if not recordings:
        raise BadInput(f"{path}: the recording holds no looks")
    _unique_ids(path, recordings)
    return recordings


#: What ends a line of a recording.
_LINE_END = re.compile(r"\r\n|\r|\n")


def _unique_ids(path: str, recordings: Sequence[Recording]) -> None:
    """Each look names each machine once: a second ``m1`` would be silently ignored by checks."""
    for recording in recordings:
        for look in recording.looks:
            ids = [m.id for m in look.machines]
            if len(set(ids)) != len(ids):
                twice = next(i for i in ids if ids.count(i) > 1)
                run = "" if recording.run is None else f" of run {recording.run!r}"
                raise BadInput(f"{path}: the look at {look.at_ms} ms{run}: machine id {twice!r} "
                               "appears twice; ids must be unique in a look")


@dataclass(frozen=True, slots=True)
class ReplayRow:
    """What one check concluded from one recorded run."""

    run: str | None
    check: str
    verdict: str | None
    reason: str
    machine: str | None
    decided_at_s: float | None
    looks_used: int
    looks_recorded: int
    setup: CheckSetup
    #: The traceback of the check's own exception, when it raised (``--debug`` shows it).
    error_detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The row as the ``replay --json`` document gives it."""
        return {
            "run": self.run,
            "check": self.check,
            "verdict": self.verdict,
            "reason": self.reason,
            "machine": self.machine,
            "decided_at_s": self.decided_at_s,
            "looks_used": self.looks_used,
            "looks_recorded": self.looks_recorded,
            "check_options": self.setup.to_json(),
        }


def replay_json(path: str, rows: Sequence[ReplayRow]) -> dict[str, Any]:
    """The ``replay --json`` document."""
    return {"schema_version": SCHEMA_VERSION, "recording": path,
            "results": [row.to_json() for row in rows]}


def recorded_seed(run: str | None) -> int | None:
    """The seed of a run the simulator labelled ``NAME/seed=N``; None for any other label."""
    _, sep, seed = (run or "").rpartition("/seed=")
    return int(seed) if sep and seed.isdigit() else None


#: Why a run the check deployed in is not replayed (its row's error).
DEPLOYED = ("{name} deployed the release in this recorded run (a pool of machines at a time), and a "
            "recording holds its looks, not its updates: replay cannot read it; record with "
            "--check-opt {name}.rollout=at-publish")


def replay_all(
    recordings: Sequence[Recording],
    names: list[str],
    extra: Mapping[str, Any],
    budget: CheckBudget = DEFAULT_CHECK_BUDGET,
) -> list[ReplayRow]:
    """Feed each recorded run to the named checks (default: every built-in).

    Checks are built with the options the run was recorded with, if it says (source
    ``recording``, in place of the scenario's). A run the simulator labelled
    ``NAME/seed=N`` goes to check NAME alone when that check is among the chosen ones
    (those are the looks it asked for); any other run goes to all. Each check is driven
    under ``budget`` (``sim.checkload.budget``).
    """
    rows = []
    for recording in recordings:
        built = build_checks(names, recording.check_options or {}, extra, source="recording")
        recorded_by = (recording.run or "").split("/")[0]
        chosen = [b for b in built if b.setup.name == recorded_by] or list(built)
        seed = recorded_seed(recording.run)
        for loaded in chosen:
            if seed is not None and loaded.setup.name == recorded_by and prepare(
                    loaded.check, seed, updates=True)[1]:
                # The simulator let this check deploy (its rollout), and a recording holds
                # the looks, not the updates: read at the publish it would give another
                # verdict (flyctl-smoke passed at +0.0 s on the previous image's first look).
                rows.append(_row(recording, loaded.setup, None, (), DEPLOYED.format(
                    name=loaded.setup.name)))
                continue
            # The recorded run's seed (``NAME/seed=N``) reaches a check that draws from
            # it; replay cannot update machines (``checks.protocol.prepare``).
            check, _ = prepare(loaded.check, seed, updates=False)
            try:
                result = replay(budget.guard(check), recording.publish_started_ms,
                                recording.looks, budget.max_looks)
            except CheckFailed as failed:  # raised or broke the protocol: that is its outcome
                cause = failed.__cause__
                detail = "".join(traceback.format_exception(cause)) if cause else None
                rows.append(_row(recording, loaded.setup, None, (), str(failed), detail=detail))
                continue
            rows.append(_row(recording, loaded.setup, result.verdict, result.looks, None))
    return rows


def _row(
    recording: Recording,
    setup: CheckSetup,
    verdict: Verdict | None,
    fed: Sequence[Look],
    error: str | None,
    *,
    detail: str | None = None,
) -> ReplayRow:
    if error is None and verdict is None:
        error = "the recording ran out of looks before the check decided"
    decided = None
    if verdict is not None and fed:
        decided = (fed[-1].at_ms - recording.publish_started_ms) / 1000
    return ReplayRow(
        run=recording.run,
        check=setup.name,
        verdict=None if verdict is None else ("pass" if verdict.ok else "fail"),
        reason=(error or "") if verdict is None else verdict.reason,
        machine=None if verdict is None else verdict.machine,
        decided_at_s=decided,
        looks_used=len(fed),
        looks_recorded=len(recording.looks),
        setup=setup,
        error_detail=detail,
    )
