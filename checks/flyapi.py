"""Fly Machines API JSON for one machine: the model to the API's objects and back, checked.

The shapes read and written, with their sources, are described in ``checks.flyjson``
(recordings, payloads and replay are built on this module).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from .model import Event, MachineSnapshot, to_ms


class RecordingError(ValueError):
    """A recording line that cannot be read; the message names the line and the field."""


# --- RFC3339 times ------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The last ms RFC3339 can write: its year has four digits (9999-12-31T23:59:59.999Z).
_RFC3339_MAX_MS = 253_402_300_799_999
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


def format_rfc3339_ms(ms: int) -> str:
    """A platform time (integer ms since the epoch) as RFC3339 in UTC, millisecond precision."""
    moment = _EPOCH + timedelta(milliseconds=ms)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}Z"


def parse_rfc3339_ms(text: str) -> int | None:
    """Integer ms since the epoch of an RFC3339 time; None if it is not one.

    Any fractional precision is accepted (Go writes up to nanoseconds) and cut to whole ms,
    as Go's ``time.UnixMilli`` does; ``Z`` or a numeric offset gives the zone.
    """
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.group(1, 2, 3, 4, 5, 6))
    try:
        # datetime rejects second 60 (a leap second), as Go's time.Parse does
        moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None
    if match.group(9):
        off_h, off_m = int(match.group(10)), int(match.group(11))
        if off_h > 23 or off_m > 59:
            return None
        offset = timedelta(hours=off_h, minutes=off_m)
        moment -= offset if match.group(9) == "+" else -offset
    fraction = (match.group(7) or "")[:3].ljust(3, "0")
    delta = moment - _EPOCH
    return to_ms(delta.days * 86_400 + delta.seconds) + int(fraction)


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
    """One event as the API shows it; exit details go under ``request.exit_event``."""
    obj: dict[str, Any] = {
        "type": event.type,
        "status": event.status,
        "source": event.source,
        "timestamp": event.timestamp,
    }
    if event.type == "exit" and event.exit_code is not None:
        # RFC3339 so fly-go's time.Time reads it; a time past year 9999 has no RFC3339
        # form and stays integer ms (which this module reads too).
        exited_at: str | int = event.timestamp
        if 0 <= event.timestamp <= _RFC3339_MAX_MS:
            exited_at = format_rfc3339_ms(event.timestamp)
        obj["request"] = {
            "exit_event": {
                "exit_code": event.exit_code,
                "oom_killed": event.oom_killed,
                "requested_stop": event.requested_stop,
                "restarting": event.restarting,
                "exited_at": exited_at,
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


def machine_to_fly(
    machine: MachineSnapshot,
    *,
    instance_id: str,
    region: str,
    created_at_ms: int,
    updated_at_ms: int,
) -> dict[str, Any]:
    """One machine snapshot as Fly's API serves it: ``machine_to_api`` plus what Fly adds.

    ``config.image``, ``instance_id`` (the version: new at every update), ``region``,
    ``created_at``/``updated_at`` (RFC3339: strings in Fly's OpenAPI ``Machine``) and
    ``host_status`` "ok" (flyctl leases only machines whose host is ok: superfly/flyctl
    internal/machine/lease.go). Empty fields are omitted, never null: the OpenAPI
    description has no ``nullable``, and fly-go's ``omitempty`` drops them too.
    """
    obj = machine_to_api(machine, machine.at_ms)
    fly: dict[str, Any] = {
        "id": machine.id,
        "name": machine.id,
        "state": machine.state,
        "region": region,
        "instance_id": instance_id,
        "host_status": "ok",
        "created_at": _rfc3339(created_at_ms),
        "updated_at": _rfc3339(updated_at_ms),
    }
    if machine.image:
        fly["config"] = {"image": machine.image}
        fly["image_ref"] = obj["image_ref"]
    fly["events"] = obj["events"]
    if "restart_counter" in obj:
        fly["restart_counter"] = obj["restart_counter"]
    return fly


def _rfc3339(ms: int) -> str:
    return format_rfc3339_ms(min(max(ms, 0), _RFC3339_MAX_MS))


# --- API JSON -> model ---------------------------------------------------------------


class Reader:
    """Typed access to one line's JSON, raising ``RecordingError`` that names the field."""

    def __init__(self, line: int, where: str | None = None) -> None:
        self.line = line
        #: Where the JSON came from, leading every message: a recording line or a payload.
        self.where = f"line {line}" if where is None else where

    def fail(self, path: str, problem: str) -> RecordingError:
        if not path:
            return RecordingError(f"{self.where}: the look {problem}")
        return RecordingError(f"{self.where}: field '{path}' {problem}")

    def field(self, obj: Mapping[str, Any], key: str, path: str) -> Any:
        value = obj.get(key)
        if value is None:
            raise self.fail(f"{path}{key}", "is missing")
        return value

    def integer(
        self, obj: Mapping[str, Any], key: str, path: str, default: int | None = None
    ) -> int:
        value = obj.get(key)
        if value is None:
            if default is None:
                raise self.fail(f"{path}{key}", "is missing")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{path}{key}", f"must be an integer, got {show_json(value)}")
        return value

    def string(
        self, obj: Mapping[str, Any], key: str, path: str, default: str | None = None
    ) -> str:
        value = obj.get(key)
        if value is None:
            if default is None:
                raise self.fail(f"{path}{key}", "is missing")
            return default
        if not isinstance(value, str):
            raise self.fail(f"{path}{key}", f"must be a string, got {show_json(value)}")
        return value

    def boolean(self, obj: Mapping[str, Any], key: str, path: str) -> bool:
        value = obj.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.fail(f"{path}{key}", f"must be true or false, got {show_json(value)}")
        return value

    def mapping(self, value: Any, path: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, f"must be an object, got {show_json(value)}")
        return value

    def array(self, value: Any, path: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(path, f"must be an array, got {show_json(value)}")
        return value


def show_json(value: Any) -> str:
    """A JSON value, shortened to keep an error message on one line."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _exit_details(
    read: Reader, request: Mapping[str, Any], path: str
) -> tuple[Mapping[str, Any] | None, str]:
    """The exit details of a request and their path: ``MonitorEvent.exit_event`` first."""
    monitor = request.get("MonitorEvent")
    if monitor is not None:
        monitor = read.mapping(monitor, f"{path}MonitorEvent")
        if monitor.get("exit_event") is not None:
            where = f"{path}MonitorEvent.exit_event"
            return read.mapping(monitor["exit_event"], where), where
    if request.get("exit_event") is not None:
        where = f"{path}exit_event"
        return read.mapping(request["exit_event"], where), where
    return None, ""


def _exited_at(read: Reader, details: Mapping[str, Any], where: str) -> int | None:
    """``exited_at`` as integer ms or an RFC3339 string, checked; None when absent."""
    value = details.get("exited_at")
    if value is None:
        return None
    if isinstance(value, str):
        parsed = parse_rfc3339_ms(value)
        if parsed is None:
            raise read.fail(f"{where}.exited_at", f"must be an RFC3339 time, got {show_json(value)}")
        return parsed
    return read.integer(details, "exited_at", f"{where}.")


def _event(read: Reader, obj: Mapping[str, Any], path: str) -> Event:
    kind = read.string(obj, "type", path, default="")
    status = read.string(obj, "status", path, default="")
    timestamp = read.integer(obj, "timestamp", path)
    source = read.string(obj, "source", path, default="flyd")
    raw_request = obj.get("request")
    request = {} if raw_request is None else read.mapping(raw_request, f"{path}request")
    details, where = _exit_details(read, request, f"{path}request.")
    if kind != "exit" or details is None:
        # Only exits carry exit details into the model; anything else under ``request``
        # (a start's empty ``{}``, a restart_count) is not part of it.
        return Event(kind, status, timestamp, source)
    _exited_at(read, details, where)
    return Event(
        kind,
        status,
        timestamp,
        source,
        exit_code=read.integer(details, "exit_code", f"{where}.", default=0),
        oom_killed=read.boolean(details, "oom_killed", f"{where}."),
        requested_stop=read.boolean(details, "requested_stop", f"{where}."),
        restarting=read.boolean(details, "restarting", f"{where}."),
        restart_count=read.integer(request, "restart_count", f"{path}request.", default=0),
    )


def machine_from_api(
    obj: Any, look_at_ms: int, line: int = 1, path: str = "", where: str | None = None
) -> MachineSnapshot:
    """A machine snapshot from an API response object, read at ``look_at_ms``."""
    read = Reader(line, where)
    machine = read.mapping(obj, path.rstrip(".") or "machine")
    ref = machine.get("image_ref") or {}
    raw_events = machine.get("events")
    events = [] if raw_events is None else read.array(raw_events, f"{path}events")
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
