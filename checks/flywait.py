"""The Machines API's ``/wait`` long poll as one rule: what the twin serves, what flyctl-smoke reads.

``GET /v1/apps/{app}/machines/{id}/wait?state=S&timeout=T[&version=V]`` holds the request
until the machine enters S, or answers 408 after T seconds. The Machines API twin
(``sim.twin``) answers with these functions, and flyctl-smoke (``checks.flyctl``) decides
from the same functions when flyctl's wait would have returned; so the two cannot read the
same world differently. Each rule says its source, or "not public: assumed".

Sources: fly-go ``flaps/flaps_machines_wait.go`` at v0.9.6 (``2c338798``, identical at
``22d6e518``); superfly/docs@5c22c8ce ``machines/api/machines-resource.html.markerb``
l.306-336 ("Wait for a Machine"); flyctl@ad0172fa ``internal/machine/leasable_machine.go``
``WaitForState`` l.225-291 and ``internal/command/deploy/plan.go`` ``waitForMachineState``
l.752-809, ``originalMachine`` l.369-374.

Known difference from flyctl, by construction: flyctl re-polls after each 408 or error
with a jittered 0.5-2 s backoff (``WaitForState`` l.274-281); a state entered and left
inside that gap would be missed by flyctl, where ``reached_at`` (and the twin, which
answers whatever happens while a poll is held) count it. A 60 s poll makes that rare.

Known difference between the twin and a reading from looks: a requested stop during the
wait (an autostop, a client's stop) writes no entry (``enters``), so the twin answers it
at the moment the machine reads stopped, and a reader of looks at the first look that
shows it stopped. Counting those exits instead would count each update's own stop, which
a client that updates machines one by one writes after the publish began. And an entry the
capped event list has already dropped by the next look (a crash loop faster than the looks,
under a small cap) is answered by the twin, which sees it happen, but not seen by a reader
of looks, which settles at the next entry a look still shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .model import MACHINE_STATES, MachineSnapshot

__all__ = (
    "DEFAULT_WAIT_S",
    "MAX_WAIT_S",
    "MIN_WAIT_S",
    "SETTLED",
    "STOPPED_NEEDS_INSTANCE_ID",
    "WAIT_STATES",
    "clamp_timeout_s",
    "enters",
    "pre_deploy_state",
    "reached_at",
    "refusal",
    "version_matches",
    "wanted_states",
)

#: fly-go ``WithWaitTimeout`` l.36-40: ``max(1 s, min(timeout, 60 s))``, 60 s being the
#: proxy's limit (``proxyTimeoutThreshold`` l.19). That the server clamps a raw request
#: the same way: not public: assumed (a client other than fly-go may send any number).
MIN_WAIT_S = 1
MAX_WAIT_S = 60
#: superfly/docs machines-resource l.315: "``timeout`` ... Default is 60."
DEFAULT_WAIT_S = 60
#: Fly's OpenAPI ``Machines_wait`` ``state`` enum (tests/data/fly/openapi). The docs page
#: (l.320) lists four; the OpenAPI description adds ``failed`` and ``settled``.
WAIT_STATES = ("started", "stopped", "suspended", "destroyed", "failed", "settled")
#: "settled": at rest, not on the way anywhere: fly-go's machine states less the
#: transitional ones (created, starting, stopping) -- not public: assumed.
SETTLED = ("started", "stopped", "suspended", "failed", "destroyed")
#: superfly/docs machines-resource l.310: ``instance_id`` is "Required when waiting for
#: Machine to be in `stopped` state", and Kilo-Org/cloud#297 (2026-02-17) reports a 400
#: without it. But flyctl never sends one (``WaitForState`` l.244 passes only states and
#: timeout; fly-go writes ``version`` only when given) and waits for ``stopped`` on every
#: machine it updates, skipped ones included (``plan.go`` l.613): with a 400 each such
#: deploy would wait out its 5 minutes. What Fly answers flyctl is not public: assumed it
#: waits for any version (False). True refuses as the docs say.
STOPPED_NEEDS_INSTANCE_ID = False


def clamp_timeout_s(timeout_s: int | None) -> int:
    """The seconds a wait is held: the docs' default when absent, fly-go's clamp otherwise."""
    if timeout_s is None:
        return DEFAULT_WAIT_S
    return max(MIN_WAIT_S, min(timeout_s, MAX_WAIT_S))


def wanted_states(states: Sequence[str]) -> tuple[str, ...]:
    """The machine states a wait for ``states`` answers on (``settled`` expanded).

    No state: ``started``, fly-go's default (``Wait`` l.64-66) and the docs' (l.320).
    """
    asked = tuple(states) or ("started",)
    return tuple(s for want in asked for s in (SETTLED if want == "settled" else (want,)))


def refusal(
    states: Sequence[str], instance_id: str | None, *, strict: bool = STOPPED_NEEDS_INSTANCE_ID
) -> str | None:
    """Why the API refuses this wait (its 400 text), or None when it takes it."""
    for state in states:
        if state not in WAIT_STATES:
            return f"invalid state {state!r}: one of {', '.join(WAIT_STATES)}"
    if strict and "stopped" in states and instance_id is None:
        return "instance_id is required when waiting for the stopped state"
    return None


def version_matches(wanted: str | None, current: str) -> bool:
    """Whether the machine's version counts: any without ``instance_id``, else that one.

    superfly/docs l.310: ``instance_id`` "Filter for a specific Machine `instance_id`
    (version)"; fly-go sends it as ``version`` (``waitQuerystring`` l.13).
    """
    return wanted is None or wanted == current


def enters(event_type: str, status: str, requested_stop: bool, wanted: Sequence[str]) -> bool:
    """Whether an event is the machine entering one of ``wanted`` states.

    An event's status is the state it enters (``start/started`` -> started, an exit ->
    stopped): superfly/docs ``_get.erb`` lists an exit with status ``stopped`` on a
    machine that reads stopped. A requested-stop exit is an update's (or a stop's) own
    stop of the old process: not counted, so an update's stop, written before the caller's
    wait begins, never answers it (not public: assumed). A requested stop that leaves the
    machine stopped still answers through the machine's state (``reached_at``).
    """
    return status in wanted and not (event_type == "exit" and requested_stop)


def reached_at(
    machine: MachineSnapshot, states: Sequence[str], since_ms: int
) -> tuple[int, str] | None:
    """When, and in which state, the machine first entered ``states`` since ``since_ms``.

    The one reading of a long poll held from ``since_ms``: a state entered at any moment
    counts, not only one a sample happens to catch (fly-go ``flaps_machines_wait.go``:
    the server holds the request until the state is entered). Read from the visible event
    list (``enters``) and from the snapshot's own state at its time: a machine already in
    a wanted state when the wait begins is answered at once (whether ``/wait`` answers a
    machine already in the state or only a transition is not public: assumed at once).
    The twin answers a held wait at the first moment this returns a time; flyctl-smoke
    reads the same from its looks.
    """
    found = (machine.at_ms, machine.state) if machine.state in states else None
    for event in machine.events:  # newest first: the last match is the earliest
        if event.timestamp < since_ms:
            break
        counts = enters(event.type, event.status, event.requested_stop, states)
        if counts and (found is None or event.timestamp <= found[0]):
            found = (event.timestamp, event.status)
    return found


def pre_deploy_state(
    machine: MachineSnapshot, publish_started_ms: int,
    declared: Mapping[str, str] | None = None,
) -> str | None:
    """The machine's state before the publish: as declared, else from its older events.

    flyctl reads it from ``List`` before any update (``plan.go``
    ``updateExistingMachinesWRecovery``, ``originalMachine`` l.369-374). A recording (or
    the simulator, or the twin) that knew each machine's state then declares it
    (``Look.pre_deploy``), which wins. Otherwise a look after the publish can only show it
    through the events that predate the publish: the newest such event's status is the
    state it left (``start/started`` -> started, ``exit/stopped`` -> stopped,
    ``launch/created`` -> created, ...). An exit with ``restarting = true`` means flyd was
    restarting the machine; its state then is not public: assumed ``starting``. None when
    nothing is declared for it and the list kept no event from before the publish.
    """
    if declared is not None and (state := declared.get(machine.id)) in MACHINE_STATES:
        return state
    for event in machine.events:  # newest first
        if event.timestamp < publish_started_ms:
            if event.type == "exit" and event.restarting:
                return "starting"
            return event.status or None
    return None
