"""The data a check sees: Fly Machines-shaped events, machine snapshots and looks."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

#: Machine states as the Fly Machines API names them.
MACHINE_STATES = (
    "created",
    "starting",
    "started",
    "stopping",
    "stopped",
    "suspended",
    "failed",
    "destroyed",
)

#: A look's clock (``at_ms``, event timestamps) counts milliseconds; a check's options and
#: waits count seconds. These three are the only conversions between the two.
MS_PER_S = 1000


def to_ms(seconds: float) -> int:
    """Seconds as whole milliseconds, rounded as ``round`` does (half to even): a clock reading."""
    return round(seconds * MS_PER_S)


def in_ms(seconds: float) -> float:
    """Seconds as milliseconds, unrounded: a span compared or added where a fraction counts."""
    return seconds * MS_PER_S


def to_s(ms: float) -> float:
    """Milliseconds as seconds."""
    return ms / MS_PER_S


class Event(NamedTuple):
    """One entry of a machine's event list; exit fields are set only on ``exit`` events.

    A named tuple rather than a frozen dataclass: as immutable and as readable, and a
    look builds every new event it shows, where a frozen dataclass's nine
    ``object.__setattr__`` calls cost ~1.4 us an event against ~0.4 us (measured: 15
    events, ~17 us of the incident world's ~210 us run).
    """

    type: str
    status: str
    timestamp: int
    source: str = "flyd"
    exit_code: int | None = None
    oom_killed: bool = False
    requested_stop: bool = False
    restarting: bool = False
    restart_count: int = 0

    @property
    def is_crash(self) -> bool:
        """True for an exit the app did not ask for: non-zero code or OOM kill, not requested."""
        return (
            self.type == "exit"
            and not self.requested_stop
            and (self.oom_killed or (self.exit_code is not None and self.exit_code != 0))
        )


class MachineSnapshot(NamedTuple):
    """A machine as one API read returned it; ``events`` are newest first and capped.

    A named tuple for the reason ``Event`` is one: every look builds one per machine.
    """

    id: str
    state: str
    image: str
    events: tuple[Event, ...]
    at_ms: int
    #: A monotonic restart counter, where the platform exposes one (None: it does not).
    restart_counter: int | None = None

    def crashes_since(self, since_ms: int) -> Iterator[Event]:
        """Crash exits in the visible list at or after ``since_ms``, newest first."""
        return (e for e in self.events if e.is_crash and e.timestamp >= since_ms)

    def newest_exit(self) -> Event | None:
        """The newest ``exit`` event still in the list."""
        return next((e for e in self.events if e.type == "exit"), None)

    @property
    def gave_up(self) -> bool:
        """True when the platform stopped restarting after a crash (Fly: restarting=false)."""
        if self.state not in ("stopped", "failed"):
            return False
        newest = self.newest_exit()
        return newest is not None and newest.is_crash and not newest.restarting


@dataclass(frozen=True, slots=True)
class Look:
    """The snapshots of a publish's machines taken at one moment (platform ms)."""

    at_ms: int
    machines: tuple[MachineSnapshot, ...]
    #: Each machine's state before the publish, by id, where the one who looked knew it
    #: (a deploy tool's ``List`` before its update; the simulator; a recording that says):
    #: read before any event (``checks.flywait.pre_deploy_state``). Not hashed: a mapping.
    pre_deploy: Mapping[str, str] | None = field(default=None, hash=False)
    #: The snapshots by machine id, built on first use: checks look machines up by id in
    #: every look, and a scan per lookup made a 10,000-machine look quadratic.
    _by_id: dict[str, MachineSnapshot] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def machine(self, machine_id: str) -> MachineSnapshot | None:
        """The snapshot of one machine in this look, if it was there (the first, if twice)."""
        index = self._by_id
        if index is None:
            index = {}
            for m in self.machines:
                index.setdefault(m.id, m)
            object.__setattr__(self, "_by_id", index)
        return index.get(machine_id)


@dataclass(frozen=True, slots=True)
class Wait:
    """Wait this many seconds, take a look, and ask the check again."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Update:
    """Update these machines to the release now, take a look in the same instant, ask again.

    Only a check that deploys asks it (``checks.protocol.Deploying``), and only of a driver
    that carries it out: the simulator and the test kit's ``drive_world`` do; replay and a
    check command do not (``checks.drive`` refuses it there, in one line). flyctl updates a
    pool of machines at a time (``plan.go`` ``updateProcessGroup``): the check says which.
    """

    machine_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The check's decision: the publish may go live (ok) or must fail, and why."""

    ok: bool
    reason: str
    machine: str | None = None
    layer: str = field(default="", compare=False)
    #: False when the check lacks the signal it needs on this platform (e.g. no restart
    #: counter): it fails safe, and the testbed reports the outcome as ``blind``.
    judged: bool = True
