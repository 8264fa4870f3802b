"""Looks as Fly Machines API JSON, recordings of them, and replaying a recording to a check.

A machine is the object ``GET /v1/apps/{app}/machines/{id}`` returns; only these fields
are read, everything else is kept out of the model and ignored, so a response saved from
the real API parses::

    {"id": "0e286e40cee686", "state": "stopped",
     "image_ref": {"registry": "registry.fly.io", "repository": "app", "tag": "release"},
     "events": [                                   # newest first, as the API returns them
       {"type": "exit", "status": "stopped", "source": "flyd", "timestamp": 1653066430241,
        "request": {"exit_event": {"exit_code": 127, "oom_killed": false,
                                   "requested_stop": false, "restarting": false,
                                   "exited_at": "2022-05-20T17:07:08.869Z"},
                    "restart_count": 0}},
       {"type": "start", "status": "started", "source": "flyd", "timestamp": 1653066426806}],
     "restart_counter": 3}                         # testbed extension, see below

Every shape Fly returns is read (``tests/data/fly/`` holds real payloads, with sources):

- Required: a machine's ``id`` and ``state``; an event's ``timestamp`` (integer ms).
- Fields Go's ``omitempty`` drops (fly-go ``machine_types.go``: ``Machine.Events``,
  ``MachineEvent``, ``MachineRequest``, ``MachineExitEvent``) default to empty: a machine
  without ``events`` has none; an event without ``type`` or ``status`` gets ``""``, without
  ``source`` ``"flyd"``; ``exit_code`` and ``restart_count`` 0; the booleans false.
- An exit's details sit under ``request.exit_event`` or, in older payloads, under
  ``request.MonitorEvent.exit_event``; like fly-go's ``MachineRequest.GetExitCode`` the
  ``MonitorEvent`` one wins when both are present. An ``exit`` event with neither is kept
  with ``exit_code`` None (unknown: not a crash).
- ``exited_at`` is read as integer ms (the documentation's and older recordings' shape) or
  as an RFC3339 string (what fly-go's ``time.Time`` writes: any fractional precision, ``Z``
  or an offset), and checked; the model keeps the event's ``timestamp`` as the exit time.
- **Written** so that fly-go can read it back: ``exited_at`` as RFC3339 in UTC with
  millisecond precision (``2022-05-20T17:07:08.869Z``); exit details under
  ``request.exit_event``.

Two fields are testbed extensions, absent from Fly's API: ``restart_counter`` (a
monotonic counter like Kubernetes' ``restartCount``; absent means the platform exposes
none) and ``at_ms`` (the machine read's own time, written only when it differs from
the look's).

A **recording** is JSON Lines, one look per line, in the order they were taken::

    {"at_ms": 1653066431000, "publish_started_ms": 1653066424000,
     "machines": [ ...machine objects... ], "run": "timestamp"}

``at_ms`` is the platform time of the look (integer ms), ``publish_started_ms`` the
platform time the publish began, ``machines`` the machine objects read at that moment,
and the optional ``run`` labels which run a line belongs to, so one file can hold the
looks of several checks' runs; lines of a run share one ``publish_started_ms`` and
never go back in time. The optional ``pre_deploy`` (testbed extension) is each
machine's state before the publish, ``{"m1": "started", ...}`` (a Fly machine state per
id), as the recorder knew it (a deploy tool's ``List`` before its update): flyctl-smoke
reads it before any event (``checks.flywait.pre_deploy_state``). One declaration holds
for every look of its run (a line without one takes its run's); two lines of a run may
not declare different ones. Blank lines are skipped. A malformed line raises
``RecordingError`` whose one-line message names the line number and the field.

A **raw payload** is what the API (or ``fly machine status --json`` / ``fly m list
--json``) printed, saved as one JSON document: a machine object, an array of machines, or
an object with a ``machines`` array. ``payload_recording`` turns it into a recording of
ONE look: taken at the newest event timestamp of any machine (else the newest
``updated_at``/``created_at``; ``at_ms`` overrides), for a publish that began at the
newest ``launch`` or ``update`` event of any machine (else at the look;
``publish_started_ms`` overrides).

**Replay** rule: the driver's clock starts at ``publish_started_ms``. On ``Wait(s)`` the
look is due at ``now + s`` (ms, rounded); the check gets the first recorded look not
yet used whose ``at_ms`` is at least the due time less ``TOLERANCE_MS`` (the recorder
rounds to whole ms), skipping earlier ones, and ``now`` becomes that look's ``at_ms``.
A replay of a recording the simulator made for a check therefore feeds it exactly the
looks it took live; a recording from a real platform polled more often serves any
check whose waits are no shorter than its polling. When no look is left, the replay
ends without a verdict.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from .drive import MAX_LOOKS, drive
from .flyapi import (
    Reader,
    RecordingError,
    event_to_api,
    format_rfc3339_ms,
    image_name,
    image_ref,
    machine_from_api,
    machine_to_api,
    parse_rfc3339_ms,
    show_json,
)
from .model import MACHINE_STATES, Look, MachineSnapshot, Verdict, to_ms
from .protocol import Check

# The API objects of one machine are read and written by ``checks.flyapi``; its public
# names stay importable from here, where recordings are described.
__all__ = (
    "PUBLISH_EVENT_TYPES", "TOLERANCE_MS", "RecordedLine", "Recording", "RecordingError",
    "ReplayResult", "dump_recording", "event_to_api", "format_rfc3339_ms", "image_name",
    "image_ref", "is_recording_line", "look_to_json", "machine_from_api", "machine_to_api",
    "parse_line", "parse_rfc3339_ms", "payload_machines", "payload_recording", "read_recording",
    "read_recordings", "replay",
)

#: A recorded look may be this many ms early for a wait and still serve it.
TOLERANCE_MS = 1


@dataclass(frozen=True, slots=True)
class Recording:
    """The looks of one recorded run, in the order they were taken."""

    publish_started_ms: int
    looks: tuple[Look, ...]
    run: str | None = None
    #: The timing the recorded check ran with (testbed extension ``check_options``), so a
    #: replay builds the check the same way.
    check_options: Mapping[str, Any] | None = None


class ReplayResult(NamedTuple):
    """What a check concluded from a recording, and the looks it was fed."""

    verdict: Verdict | None
    looks: tuple[Look, ...]


def look_to_json(
    look: Look,
    publish_started_ms: int,
    run: str | None = None,
    check_options: Mapping[str, Any] | None = None,
) -> str:
    """One recording line (no newline) for a look."""
    obj: dict[str, Any] = {
        "at_ms": look.at_ms,
        "publish_started_ms": publish_started_ms,
        "machines": [machine_to_api(m, look.at_ms) for m in look.machines],
    }
    if run is not None:
        obj["run"] = run
    if check_options:
        obj["check_options"] = dict(check_options)
    if look.pre_deploy:
        obj["pre_deploy"] = dict(look.pre_deploy)
    return json.dumps(obj, separators=(",", ":"))


def dump_recording(recording: Recording) -> str:
    """A whole recording as JSON Lines text, one look per line."""
    return "".join(
        look_to_json(look, recording.publish_started_ms, recording.run, recording.check_options)
        + "\n"
        for look in recording.looks
    )


class RecordedLine(NamedTuple):
    """One parsed recording line."""

    look: Look
    publish_started_ms: int
    run: str | None
    check_options: Mapping[str, Any] | None = None


def parse_line(text: str, line: int = 1) -> RecordedLine:
    """Parse one recording line; ``RecordingError`` names the line and the field."""
    read = Reader(line)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise RecordingError(
            f"line {line}: not valid JSON ({error.msg} at column {error.colno})"
        ) from None
    obj = read.mapping(raw, "")
    at_ms = read.integer(obj, "at_ms", "")
    publish_started_ms = read.integer(obj, "publish_started_ms", "")
    machines = read.array(read.field(obj, "machines", ""), "machines")
    run = obj.get("run")
    if run is not None and not isinstance(run, str):
        raise read.fail("run", f"must be a string, got {json.dumps(run)}")
    options = obj.get("check_options")
    if options is not None and not isinstance(options, dict):
        raise read.fail("check_options", f"must be an object, got {json.dumps(options)}")
    look = Look(
        at_ms,
        tuple(machine_from_api(m, at_ms, line, f"machines[{i}].") for i, m in enumerate(machines)),
        _pre_deploy(read, obj.get("pre_deploy")),
    )
    return RecordedLine(look, publish_started_ms, run, options)


def _pre_deploy(read: Reader, value: Any) -> dict[str, str] | None:
    """A line's ``pre_deploy``: machine ids to Fly machine states, checked field by field."""
    if value is None:
        return None
    declared = read.mapping(value, "pre_deploy")
    for machine_id, state in declared.items():
        if state not in MACHINE_STATES:
            raise read.fail(f"pre_deploy.{machine_id}",
                            f"must be one of {', '.join(MACHINE_STATES)}, got {show_json(state)}")
    return dict(declared)


def read_recordings(lines: Iterable[str]) -> list[Recording]:
    """Every run in a recording, in order of first appearance; blank lines are skipped."""
    runs: dict[str | None, tuple[int, list[Look]]] = {}
    options: dict[str | None, Mapping[str, Any] | None] = {}
    declared: dict[str | None, Mapping[str, str] | None] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        parsed = parse_line(text, number)
        look = parsed.look
        if parsed.run not in runs:
            runs[parsed.run] = (parsed.publish_started_ms, [look])
            options[parsed.run] = parsed.check_options
            declared[parsed.run] = look.pre_deploy
            continue
        started, looks = runs[parsed.run]
        known = declared[parsed.run]
        if known is None:
            declared[parsed.run] = look.pre_deploy
        elif look.pre_deploy is not None and dict(look.pre_deploy) != dict(known):
            raise RecordingError(f"line {number}: field 'pre_deploy' differs from the one "
                                 "earlier lines of this run declare; a run has one")
        if parsed.publish_started_ms != started:
            raise RecordingError(
                f"line {number}: field 'publish_started_ms' is {parsed.publish_started_ms}, "
                f"but earlier lines of this run say {started}"
            )
        if look.at_ms < looks[-1].at_ms:
            raise RecordingError(
                f"line {number}: field 'at_ms' is {look.at_ms}, earlier than the "
                f"previous look of this run ({looks[-1].at_ms}); looks must be in time order"
            )
        looks.append(look)
    # dict order is the order runs first appeared in the file: deterministic.
    # A run's declaration holds for each of its looks, those before the line that made it too.
    return [
        Recording(started, tuple(_declare(look, declared[run]) for look in looks), run,
                  options[run])
        for run, (started, looks) in runs.items()
    ]


def _declare(look: Look, pre_deploy: Mapping[str, str] | None) -> Look:
    if pre_deploy is None or look.pre_deploy is not None:
        return look
    return replace(look, pre_deploy=pre_deploy)


def read_recording(lines: Iterable[str]) -> Recording:
    """The single run in a recording; an error if it holds none or several."""
    recordings = read_recordings(lines)
    if not recordings:
        raise RecordingError("the recording holds no looks")
    if len(recordings) > 1:
        names = ", ".join(repr(r.run) for r in recordings)
        raise RecordingError(
            f"the recording holds {len(recordings)} runs ({names}); read them with "
            "read_recordings and replay one"
        )
    return recordings[0]


# --- raw API payloads ----------------------------------------------------------------

#: Event types that mark a publish reaching a machine: a new machine or a new config/image.
PUBLISH_EVENT_TYPES = ("launch", "update")


def is_recording_line(obj: Any) -> bool:
    """True for a parsed JSON document shaped as a recording line rather than a raw payload."""
    return isinstance(obj, dict) and "at_ms" in obj and "publish_started_ms" in obj


def payload_machines(obj: Any) -> list[Any]:
    """The machine objects of a raw payload: one machine, an array, or ``{"machines": [...]}``."""
    read = Reader(1, "payload")
    if isinstance(obj, list):
        return obj
    if isinstance(obj, dict) and "machines" in obj:
        return read.array(obj["machines"], "machines")
    if isinstance(obj, dict):
        return [obj]
    raise RecordingError(
        f"payload: must be a machine object, an array of machines or an object with "
        f"'machines', got {show_json(obj)}"
    )


def _machine_times(obj: Any) -> list[int]:
    """The machine's own RFC3339 ``updated_at``/``created_at``, as ms (those that parse)."""
    if not isinstance(obj, dict):
        return []
    found = []
    for key in ("updated_at", "created_at"):
        value = obj.get(key)
        parsed = parse_rfc3339_ms(value) if isinstance(value, str) else None
        if parsed is not None:
            found.append(parsed)
    return found


def payload_recording(
    obj: Any, at_ms: int | None = None, publish_started_ms: int | None = None
) -> Recording:
    """A raw payload as a recording of ONE look (see the module docstring for the times)."""
    raws = payload_machines(obj)
    where = "payload"
    # Read once at a provisional time to validate and collect the events.
    provisional = [
        machine_from_api(m, 0, path=f"machines[{i}].", where=where) for i, m in enumerate(raws)
    ]
    events = [e for m in provisional for e in m.events]
    if at_ms is None:
        candidates = [e.timestamp for e in events] or [
            t for m in raws for t in _machine_times(m)
        ]
        if not candidates:
            raise RecordingError(
                "payload: no event timestamp, updated_at or created_at to date the look; "
                "give its time (--at-ms)"
            )
        at_ms = max(candidates)
    if publish_started_ms is None:
        publishes = [e.timestamp for e in events if e.type in PUBLISH_EVENT_TYPES]
        publish_started_ms = max(publishes, default=at_ms)
    if publish_started_ms > at_ms:
        raise RecordingError(
            f"payload: the publish ({publish_started_ms}) is later than the look ({at_ms}); "
            "a look cannot precede its publish"
        )
    machines = tuple(
        MachineSnapshot(m.id, m.state, m.image, m.events, at_ms, m.restart_counter)
        if "at_ms" not in raw
        else m
        for m, raw in zip(provisional, raws, strict=True)
    )
    return Recording(publish_started_ms, (Look(at_ms, machines),), None)


# --- replay --------------------------------------------------------------------------


def replay(
    check: Check, publish_started_ms: int, looks: Sequence[Look], max_looks: int = MAX_LOOKS
) -> ReplayResult:
    """Feed recorded looks to a check in order, each wait served by the next look due.

    The check is driven by the one driver loop (``checks.drive``, with ``max_looks``): a
    check that raises or breaks the protocol ends the replay with ``CheckFailed``.
    """
    fed: list[Look] = []
    now_ms = publish_started_ms
    index = 0
    steps = drive(check, publish_started_ms, max_looks)
    try:
        wait = next(steps)
        while True:
            due_ms = now_ms + to_ms(wait) - TOLERANCE_MS
            while index < len(looks) and looks[index].at_ms < due_ms:
                index += 1
            if index == len(looks):
                return ReplayResult(None, tuple(fed))
            look = looks[index]
            fed.append(look)
            now_ms = look.at_ms
            index += 1
            wait = steps.send(look)
    except StopIteration as done:
        return ReplayResult(done.value, tuple(fed))
