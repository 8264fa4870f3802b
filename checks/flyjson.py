"""Looks as Fly Machines API JSON, recordings of them, and replaying a recording to a check.

A machine is the object ``GET /v1/apps/{app}/machines/{id}`` returns; only these fields
are read, everything else is ignored, so a response saved from the real API parses::

    {"id": "0e286e40cee686", "state": "stopped",
     "image_ref": {"registry": "registry.fly.io", "repository": "app", "tag": "release"},
     "events": [                                   # newest first, as the API returns them
       {"type": "exit", "status": "stopped", "source": "flyd", "timestamp": 1653066430241,
        "request": {"exit_event": {"exit_code": 127, "oom_killed": false,
                                   "requested_stop": false, "restarting": false,
                                   "exited_at": 1653066428869},
                    "restart_count": 0}},
       {"type": "start", "status": "started", "source": "flyd", "timestamp": 1653066426806}],
     "restart_counter": 3}                         # testbed extension, see below

Required: ``id``, ``state``, ``events``; per event ``type``, ``status``, ``timestamp``
(integer ms); an ``exit`` event also needs ``request.exit_event``. Fields the API omits
when zero or false (Go ``omitempty``) default to that: ``exit_code``, ``restart_count``
0, the booleans false, ``source`` "flyd", ``image_ref`` empty. ``exited_at`` is written
as the event's ms timestamp (the documentation's shape) and not read back.

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
never go back in time. Blank lines are skipped. A malformed line raises
``RecordingError`` whose one-line message names the line number and the field.

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
from dataclasses import dataclass
from typing import Any, NamedTuple

from checks.model import Event, Look, MachineSnapshot, Verdict, Wait
from checks.protocol import Check

#: A recorded look may be this many ms early for a wait and still serve it.
TOLERANCE_MS = 1


class RecordingError(ValueError):
    """A recording line that cannot be read; the message names the line and the field."""


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


# --- model -> API JSON ---------------------------------------------------------------


def image_ref(image: str) -> dict[str, str]:
    """Split an image reference into the API's ``image_ref`` object (Docker's rules)."""
    if not image:
        return {}
    rest, _, digest = image.partition("@")
    registry = ""
    first, slash, remainder = rest.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, rest = first, remainder
    repository, tag = rest, ""
    name_start = repository.rfind("/") + 1
    colon = repository.rfind(":")
    if colon >= name_start:
        repository, tag = repository[:colon], repository[colon + 1 :]
    ref = {"registry": registry, "repository": repository, "tag": tag, "digest": digest}
    return {k: v for k, v in ref.items() if v}


def image_name(ref: Mapping[str, Any]) -> str:
    """Join an ``image_ref`` object back into one reference string."""
    name = str(ref.get("repository", ""))
    if registry := ref.get("registry"):
        name = f"{registry}/{name}"
    if tag := ref.get("tag"):
        name = f"{name}:{tag}"
    if digest := ref.get("digest"):
        name = f"{name}@{digest}"
    return name


def event_to_api(event: Event) -> dict[str, Any]:
    """One event as the API shows it; exit details go under ``request``."""
    obj: dict[str, Any] = {
        "type": event.type,
        "status": event.status,
        "source": event.source,
        "timestamp": event.timestamp,
    }
    if event.type == "exit":
        obj["request"] = {
            "exit_event": {
                "exit_code": event.exit_code if event.exit_code is not None else 0,
                "oom_killed": event.oom_killed,
                "requested_stop": event.requested_stop,
                "restarting": event.restarting,
                "exited_at": event.timestamp,
            },
            "restart_count": event.restart_count,
        }
    return obj


def machine_to_api(machine: MachineSnapshot, look_at_ms: int | None = None) -> dict[str, Any]:
    """One machine snapshot as a ``GET /v1/apps/{app}/machines/{id}`` response."""
    obj: dict[str, Any] = {
        "id": machine.id,
        "state": machine.state,
        "image_ref": image_ref(machine.image),
        "events": [event_to_api(e) for e in machine.events],
    }
    if machine.restart_counter is not None:
        obj["restart_counter"] = machine.restart_counter
    if machine.at_ms != look_at_ms:
        obj["at_ms"] = machine.at_ms
    return obj


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
    return json.dumps(obj, separators=(",", ":"))


def dump_recording(recording: Recording) -> str:
    """A whole recording as JSON Lines text, one look per line."""
    return "".join(
        look_to_json(look, recording.publish_started_ms, recording.run, recording.check_options) + "\n"
        for look in recording.looks
    )


# --- API JSON -> model ---------------------------------------------------------------


class _Reader:
    """Typed access to one line's JSON, raising ``RecordingError`` that names the field."""

    def __init__(self, line: int) -> None:
        self.line = line

    def fail(self, path: str, problem: str) -> RecordingError:
        if not path:
            return RecordingError(f"line {self.line}: the look {problem}")
        return RecordingError(f"line {self.line}: field '{path}' {problem}")

    def field(self, obj: Mapping[str, Any], key: str, path: str) -> Any:
        value = obj.get(key)
        if value is None:
            raise self.fail(f"{path}{key}", "is missing")
        return value

    def integer(self, obj: Mapping[str, Any], key: str, path: str, default: int | None = None) -> int:
        value = obj.get(key)
        if value is None:
            if default is None:
                raise self.fail(f"{path}{key}", "is missing")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{path}{key}", f"must be an integer, got {_show(value)}")
        return value

    def string(self, obj: Mapping[str, Any], key: str, path: str, default: str | None = None) -> str:
        value = obj.get(key)
        if value is None:
            if default is None:
                raise self.fail(f"{path}{key}", "is missing")
            return default
        if not isinstance(value, str):
            raise self.fail(f"{path}{key}", f"must be a string, got {_show(value)}")
        return value

    def boolean(self, obj: Mapping[str, Any], key: str, path: str) -> bool:
        value = obj.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.fail(f"{path}{key}", f"must be true or false, got {_show(value)}")
        return value

    def mapping(self, value: Any, path: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, f"must be an object, got {_show(value)}")
        return value

    def array(self, value: Any, path: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(path, f"must be an array, got {_show(value)}")
        return value


def _show(value: Any) -> str:
    """A JSON value, shortened to keep an error message on one line."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _event(read: _Reader, obj: Mapping[str, Any], path: str) -> Event:
    kind = read.string(obj, "type", path)
    status = read.string(obj, "status", path)
    timestamp = read.integer(obj, "timestamp", path)
    source = read.string(obj, "source", path, default="flyd")
    if kind != "exit":
        return Event(kind, status, timestamp, source)
    request = read.mapping(read.field(obj, "request", path), f"{path}request")
    exit_event = read.mapping(
        read.field(request, "exit_event", f"{path}request."), f"{path}request.exit_event"
    )
    where = f"{path}request.exit_event."
    return Event(
        kind,
        status,
        timestamp,
        source,
        exit_code=read.integer(exit_event, "exit_code", where, default=0),
        oom_killed=read.boolean(exit_event, "oom_killed", where),
        requested_stop=read.boolean(exit_event, "requested_stop", where),
        restarting=read.boolean(exit_event, "restarting", where),
        restart_count=read.integer(request, "restart_count", f"{path}request.", default=0),
    )


def machine_from_api(obj: Any, look_at_ms: int, line: int = 1, path: str = "") -> MachineSnapshot:
    """A machine snapshot from an API response object, read at ``look_at_ms``."""
    read = _Reader(line)
    machine = read.mapping(obj, path.rstrip(".") or "machine")
    ref = machine.get("image_ref") or {}
    events = read.array(read.field(machine, "events", path), f"{path}events")
    counter = machine.get("restart_counter")
    return MachineSnapshot(
        id=read.string(machine, "id", path),
        state=read.string(machine, "state", path),
        image=image_name(read.mapping(ref, f"{path}image_ref")),
        events=tuple(
            _event(read, read.mapping(e, f"{path}events[{i}]"), f"{path}events[{i}].")
            for i, e in enumerate(events)
        ),
        at_ms=read.integer(machine, "at_ms", path, default=look_at_ms),
        restart_counter=None if counter is None else read.integer(machine, "restart_counter", path),
    )


class RecordedLine(NamedTuple):
    """One parsed recording line."""

    look: Look
    publish_started_ms: int
    run: str | None
    check_options: Mapping[str, Any] | None = None


def parse_line(text: str, line: int = 1) -> RecordedLine:
    """Parse one recording line; ``RecordingError`` names the line and the field."""
    read = _Reader(line)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise RecordingError(f"line {line}: not valid JSON ({error.msg} at column {error.colno})") from None
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
    )
    return RecordedLine(look, publish_started_ms, run, options)


def read_recordings(lines: Iterable[str]) -> list[Recording]:
    """Every run in a recording, in order of first appearance; blank lines are skipped."""
    runs: dict[str | None, tuple[int, list[Look]]] = {}
    options: dict[str | None, Mapping[str, Any] | None] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        parsed = parse_line(text, number)
        if parsed.run not in runs:
            runs[parsed.run] = (parsed.publish_started_ms, [parsed.look])
            options[parsed.run] = parsed.check_options
            continue
        started, looks = runs[parsed.run]
        if parsed.publish_started_ms != started:
            raise RecordingError(
                f"line {number}: field 'publish_started_ms' is {parsed.publish_started_ms}, "
                f"but earlier lines of this run say {started}"
            )
        if parsed.look.at_ms < looks[-1].at_ms:
            raise RecordingError(
                f"line {number}: field 'at_ms' is {parsed.look.at_ms}, earlier than the "
                f"previous look of this run ({looks[-1].at_ms}); looks must be in time order"
            )
        looks.append(parsed.look)
    # dict order is the order runs first appeared in the file: deterministic.
    return [Recording(started, tuple(looks), run, options[run]) for run, (started, looks) in runs.items()]


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


# --- replay --------------------------------------------------------------------------


def replay(check: Check, publish_started_ms: int, looks: Sequence[Look]) -> ReplayResult:
    """Feed recorded looks to a check in order, each wait served by the next look due."""
    fed: list[Look] = []
    now_ms = publish_started_ms
    index = 0
    while True:
        step = check.next(publish_started_ms, fed)
        if isinstance(step, Verdict):
            return ReplayResult(step, tuple(fed))
        if not isinstance(step, Wait) or not step.seconds >= 0:
            raise TypeError(f"check returned {step!r}; expected Wait(seconds >= 0) or Verdict")
        due_ms = now_ms + round(step.seconds * 1000) - TOLERANCE_MS
        while index < len(looks) and looks[index].at_ms < due_ms:
            index += 1
        if index == len(looks):
            return ReplayResult(None, tuple(fed))
        fed.append(looks[index])
        now_ms = looks[index].at_ms
        index += 1
