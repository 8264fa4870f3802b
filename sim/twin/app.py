"""The scenario's app as Fly's Machines API sees it: API calls in, the one world's snapshots out.

The moto rule (STYLE.md): this module holds no platform logic. Each call is translated
into what the world already does (``Machine.update``, ``launch``, ``sleep``, ``wake``) and
each answer renders the machines' snapshots (``checks.flyapi.machine_to_fly``). What it
keeps is what the API adds around the model: each machine's version (``instance_id``, new
at every update), leases, and the looks the client took. Every method runs on the
driver's thread (``sim.twin.clock``), the only one that touches the SimPy environment.

Statuses and bodies follow Fly's (sources in ``tests/data/fly/openapi/SOURCE.md``):
``{"error": "..."}`` with 400 (a request the API refuses), 404 (app, machine, lease),
408 (a wait that timed out), 409 (a write to a machine leased by someone else).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import simpy

from platform_testbed import checks
from platform_testbed.checks import flywait
from platform_testbed.checks.flyapi import format_rfc3339_ms, machine_to_fly
from platform_testbed.sim.config.scenario import Scenario
from platform_testbed.sim.platform.machine import Image, Machine
from platform_testbed.sim.publish import world as worlds
from platform_testbed.sim.publish.runresult import RecordedLook
from platform_testbed.sim.twin.faults import CLOSED, Faults, RequestKind, error_body

__all__ = [
    "REGION",
    "Answer",
    "ApiError",
    "Held",
    "Look",
    "ServedApp",
    "WaitStarted",
]

#: Not public: assumed. Any region code serves; Fly's API only echoes it.
REGION = "iad"
#: Not public: assumed. fly-go always sends a ttl; a lease asked for without one lasts this.
DEFAULT_LEASE_TTL_S = 30
#: Not public: assumed. The longest lease a client may ask for (a day): past it 400, where
#: an unbounded one (``1e12``, ``2**63``) made the machine unwritable for good.
MAX_LEASE_TTL_S = 86_400
#: Not public: assumed. Fly's owner is the token's user (an e-mail address).
LEASE_OWNER = "user@testbed.local"
#: Not public: assumed. Who holds a lease in a "held by someone else" fault (``[api]``).
OTHER_LEASE_OWNER = "someone-else@testbed.local"
#: Reads whose last answer is kept for a stale read (``[api] stale_share``), at most.
MAX_STALE_READS = 1_024
#: Not public: assumed. The testbed's bounds on what a client can make the app hold.
MAX_MACHINES = 1_000
MAX_METADATA = 64
MAX_METADATA_TEXT = 1_024
#: Looks kept, and machine snapshots kept in them (a look holds one per machine): past
#: either a look is counted, not kept, so memory is bounded however many reads a client
#: makes (about 0.4 KB a look and 0.15 KB a snapshot: at most about 25 MB). A deploy step
#: that polls every second for the 600 s of a scenario takes 600.
MAX_LOOKS = 20_000
MAX_LOOK_MACHINES = 100_000
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

Answer = tuple[int, Any]


class ApiError(Exception):
    """A request the API refuses: its status and Fly's ``{"error": ...}`` text."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(slots=True)
class _Version:
    instance_id: str
    updated_ms: int


@dataclass(frozen=True, slots=True)
class Look:
    """One read of machines by the client: the platform time and the JSON it was served.

    Kept as the snapshots (shared with the row's ``RecordedLook``) and each machine's
    version; the JSON is rendered when it is read, so a look is stored once.
    """

    recorded: RecordedLook
    versions: tuple[_Version, ...]
    created_ms: int

    @property
    def at_ms(self) -> int:
        """The platform time of the read."""
        return self.recorded.look.at_ms

    @property
    def machines(self) -> tuple[dict[str, Any], ...]:
        """Each machine as it was served at the read."""
        return tuple(render(s, v, self.created_ms, served=False)
                     for s, v in zip(self.recorded.look.machines, self.versions, strict=True))


@dataclass(slots=True)
class _Lease:
    nonce: str
    expires_ms: int
    description: str


@dataclass(slots=True)
class WaitStarted:
    """A wait the machine has not answered yet: ``future`` gets its answer."""

    machine: Machine
    wanted: tuple[str, ...]
    future: Future[Answer] = field(default_factory=Future)


@dataclass(slots=True)
class Held:
    """An answer held in world time (``[api] latency_s``): ``future`` gets it when it is due.

    ``answer`` is known at once; a held wait's comes from ``source`` when the wait is answered.
    """

    answer: Answer | None = None
    source: Future[Answer] | None = None
    future: Future[Answer] = field(default_factory=Future)


def _ulid(ms: int, key: str) -> str:
    """A 26-character ULID (48-bit ms time, 80 bits from ``key``): deterministic, no RNG."""
    value = (max(ms, 0) % (1 << 48)) << 80 | int.from_bytes(
        hashlib.sha256(key.encode()).digest()[:10], "big")
    return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(26)))


def render(
    snapshot: checks.MachineSnapshot, version: _Version, created_ms: int, *, served: bool = True
) -> dict[str, Any]:
    """A machine snapshot as ``GET /v1/apps/{app}/machines/{id}`` returns it.

    ``checks.flyapi.machine_to_fly`` plus what real clients read: ``image_ref.digest``
    (superfly/docs' update response, fly-go ``MachineImageRef``, the
    ``docs-list-two-started.json`` fixture; fly-python-sdk's model requires it) and an
    ``id`` on each event (OpenAPI ``MachineEvent.id``; ``event_ids``). ``served`` False
    (a recording's look) leaves the digest out: a replay reads ``image_ref`` back into the
    image, which must stay the reference the scenario names.
    """
    fly = machine_to_fly(snapshot, instance_id=version.instance_id, region=REGION,
                         created_at_ms=created_ms, updated_at_ms=version.updated_ms)
    ref = fly.get("image_ref")
    if served and ref is not None and "digest" not in ref:
        ref["digest"] = image_digest(snapshot.image)
    for event, event_id in zip(fly["events"], event_ids(snapshot), strict=True):
        event["id"] = event_id
    return fly


def image_digest(image: str) -> str:
    """Not public: assumed. A digest for an image the testbed names but never built: the
    sha256 of its reference, so each release has its own and a client can roll back by it."""
    return "sha256:" + hashlib.sha256(image.encode()).hexdigest()


def event_ids(snapshot: checks.MachineSnapshot) -> list[str]:
    """Each visible event's id, newest first: a ULID of its timestamp (ids sort as time does,
    as Fly's ULIDs do) and of the event itself, the same at every read."""
    events = snapshot.events
    cached = _EVENT_IDS.get(snapshot.id)
    # A machine's log hands out the same tuple until its next event: every read and every
    # held wait's check between two events reuse the ids (a sha256 each) worked out once.
    if cached is not None and cached[0] is events:
        return cached[1]
    seen: dict[tuple[int, str, str], int] = {}
    ids = []
    for event in reversed(events):  # oldest first: a repeat's count is stable
        key = (event.timestamp, event.type, event.status)
        seen[key] = seen.get(key, -1) + 1
        ids.append(_ulid(event.timestamp, f"{snapshot.id}:{key}:{seen[key]}"))
    ids.reverse()
    if len(_EVENT_IDS) < 4 * MAX_MACHINES:
        _EVENT_IDS[snapshot.id] = (events, ids)
    return ids


#: The last ids worked out for each machine id, with the event tuple they are of (held, so
#: its identity cannot be reused). Shared by the worlds of this process: a hit needs the
#: very tuple, so another world's machine of the same id never reads another's ids.
_EVENT_IDS: dict[str, tuple[tuple[checks.Event, ...], list[str]]] = {}


def ulid_ms(text: str) -> int | None:
    """The millisecond time a 26-character ULID holds (its first 10 characters), or None."""
    if len(text) != 26 or any(c not in _CROCKFORD for c in text.upper()):
        return None
    value = 0
    for char in text.upper()[:10]:
        value = value * 32 + _CROCKFORD.index(char)
    return value


class ServedApp:
    """The world of one scenario and seed, driven by Machines API calls.

    ``testbed_publishes``: the testbed updates the machines to the release at the
    scenario's publish (as ``compare`` does) and the client only judges; otherwise the
    previous release runs and the client deploys.
    """

    def __init__(self, scenario: Scenario, seed: int, *, testbed_publishes: bool = False) -> None:
        # trace: every state change goes through on_state and next_change (no quiet
        # restarts, the same draws), and the report lists every event, uncapped.
        self.world = worlds.build(scenario, seed, trace=True)
        self.scenario = scenario
        self.seed = seed
        self.app = scenario.name
        self.env: simpy.Environment = self.world.env
        self.machines = {m.id: m for m in self.world.machines}
        epoch = scenario.platform.epoch_ms
        self.created_ms = epoch
        self.versions = {m: _Version(_ulid(epoch, f"{m}:0"), epoch) for m in self.machines}
        #: Each machine's versions, oldest first: (instance_id, image ref) (``Machines_list_versions``).
        first = self.world.previous.ref if self.world.previous is not None else ""
        self._history = {m: [(v.instance_id, first)] for m, v in self.versions.items()}
        #: Each machine's metadata (``Machines_*_metadata``), bounded (``MAX_METADATA``).
        self._metadata: dict[str, dict[str, str]] = {}
        self._updates = 0
        self._leases: dict[str, _Lease] = {}
        self._nonces = 0
        #: When the release first went out (platform ms): the client's first update to it.
        self.publish_started_ms: int | None = None
        #: Each machine's state before the release's first update (empty until then).
        self.pre_deploy: dict[str, str] = {}
        #: The looks kept (``MAX_LOOK_MACHINES``), each machine's version at each, and the
        #: reads past the cap, counted.
        self.recorded: list[RecordedLook] = []
        self._look_versions: list[tuple[_Version, ...]] = []
        self._look_machines = 0
        self.looks_not_kept = 0
        self._pre_deploy_of: dict[str, str] | None = None
        self._pre_deploy_view: dict[str, str] | None = None
        #: Waits and held answers not answered yet, by a running number (each leaves as it is
        #: answered): what a driver holds the world for.
        self._waits: dict[int, WaitStarted | Held] = {}
        self._wait_numbers = 0
        #: Each machine's held waits (their checks, by number), and the machines whose next
        #: change one callback already watches for them.
        self._held: dict[str, dict[int, Callable[[], None]]] = {}
        self._watched: set[str] = set()
        #: The API's own faults (``[api]``), drawn from a stream of their own, and each
        #: read's last answer for a stale read.
        self.faults = Faults(scenario.api, seed)
        self._served: dict[str, Answer] = {}
        worlds.start_previous(self.world)
        if testbed_publishes:
            self.env.process(self._testbed_publish())

    # -- the world's own steps ----------------------------------------------------------

    @property
    def start_s(self) -> float:
        """Where the world hands over to the client: the scenario's publish."""
        return self.world.publish_at_s

    def now_ms(self) -> int:
        """The platform clock (integer ms)."""
        return self.scenario.platform.epoch_ms + round(self.env.now * 1000)

    def _testbed_publish(self) -> Generator[simpy.Event, Any, None]:
        yield self.env.timeout(self.start_s)
        for machine in self.world.machines:
            self._put_image(machine, self.world.release, self.scenario.publish.start_stopped)
        # As the world's publish: a machine left stopped is started by fly-proxy at the
        # next request ([traffic] autostart), the same draw at the same instant.
        worlds.after_roll(self.world)

    def _put_image(self, machine: Machine, image: Image, start: bool) -> None:
        """The publish's own step for one machine (sim.publish.world._publish): launch or update."""
        self._before_release(image)
        worlds.put_image(machine, image, start)
        self._new_version(machine, image)

    def _before_release(self, image: Image) -> None:
        if image is self.world.release and self.publish_started_ms is None:
            # What a deploy tool's List shows just before its first update (flyctl's
            # ``originalMachine``): every machine that exists, in the state it has.
            self.pre_deploy = {m.id: m.state for m in self.world.machines if m.state != "created"}

    def _new_version(self, machine: Machine, image: Image) -> None:
        self._updates += 1
        now = self.now_ms()
        version = _Version(_ulid(now, f"{machine.id}:{self._updates}"), now)
        self.versions[machine.id] = version
        self._history.setdefault(machine.id, []).append((version.instance_id, image.ref))
        if image is self.world.release and self.publish_started_ms is None:
            self.publish_started_ms = now

    # -- rendering ------------------------------------------------------------------------

    def render(self, machine: Machine) -> dict[str, Any]:
        """The machine as ``GET /v1/apps/{app}/machines/{id}`` returns it (``nonce``: its lease's)."""
        fly = render(machine.snapshot(), self.versions[machine.id], self.created_ms)
        lease = self._lease(machine)
        if lease is not None:
            fly["nonce"] = lease.nonce  # OpenAPI Machine.nonce
        return fly

    @property
    def looks(self) -> list[Look]:
        """The looks kept, in order (their JSON rendered as it is read)."""
        return [Look(r, v, self.created_ms)
                for r, v in zip(self.recorded, self._look_versions, strict=True)]

    def _machine(self, app: str, machine_id: str) -> Machine:
        if app != self.app:
            raise ApiError(404, "app not found")
        machine = self.machines.get(machine_id)
        if machine is None:
            # The text flyctl matches ("machine not found"), as flaps words it.
            raise ApiError(404, "not_found: machine not found")
        return machine

    # -- reads ------------------------------------------------------------------------------

    def show_app(self, app: str) -> Answer:
        """``GET /apps/{app}``: the app (OpenAPI ``App``); its organisation is not public: assumed."""
        if app != self.app:
            raise ApiError(404, "app not found")
        return 200, {"id": app, "name": app, "status": "deployed", "network": "default",
                     "organization": {"name": "personal", "slug": "personal"},
                     "machine_count": sum(m.state != "destroyed" for m in self.world.machines),
                     "volume_count": 0}

    def list(
        self, app: str, states: Sequence[str] = (), *, region: str | None = None,
        summary: bool = False, include_deleted: bool = False,
    ) -> Answer:
        """``GET /apps/{app}/machines``: every machine (``state=``: those in these states).

        OpenAPI ``Machines_list``: ``region`` filters by region (every machine is in
        ``REGION``); ``summary`` "omit config, checks, events, host_status, nonce".
        """
        if app != self.app:
            raise ApiError(404, "app not found")
        self._look()
        if region is not None and region != REGION:
            return 200, []
        shown = [self.render(m) for m in self.world.machines if (not states or m.state in states)
                 and (include_deleted or m.state != "destroyed")]
        if summary:
            for machine in shown:
                for name in ("config", "checks", "events", "host_status", "nonce"):
                    machine.pop(name, None)
        return 200, shown

    def events(self, app: str, machine_id: str, limit: int | None) -> Answer:
        """``GET /apps/{app}/machines/{id}/events``: its events, newest first (OpenAPI
        ``Machines_list_events``: ``limit`` "max of 50", 20 when omitted)."""
        machine = self._machine(app, machine_id)
        if limit is not None and limit < 1:
            raise ApiError(400, "invalid limit: at least 1")
        self._look()
        events = self.render(machine)["events"]
        return 200, events[: min(limit or 20, 50)]

    def get(self, app: str, machine_id: str) -> Answer:
        """``GET /apps/{app}/machines/{id}``: one machine."""
        machine = self._machine(app, machine_id)
        self._look()
        return 200, self.render(machine)

    def _look(self) -> None:
        """Record a read of the machines as a look at the whole fleet at this instant.

        The fleet, even for a read of one machine or a wait's answer: a replayed check
        needs every machine in every look (one missing from a look is lost to it).
        """
        machines = self.world.machines
        if len(self.recorded) >= MAX_LOOKS or self._look_machines + len(machines) > MAX_LOOK_MACHINES:
            self.looks_not_kept += 1
            return
        self._look_machines += len(machines)
        at_ms = self.now_ms()
        # The same look as the simulator's checks get it (``sim.twin.step`` makes a row of it).
        if self._pre_deploy_of is not self.pre_deploy:
            # One copy shared by every look after the release's first update (it is set once).
            self._pre_deploy_of, self._pre_deploy_view = self.pre_deploy, dict(self.pre_deploy) or None
        self.recorded.append(RecordedLook(
            checks.Look(at_ms, tuple(m.snapshot(at_ms) for m in machines), self._pre_deploy_view),
            tuple(m.log.dropped for m in machines)))
        self._look_versions.append(tuple(self.versions[m.id] for m in machines))

    # -- writes -----------------------------------------------------------------------------

    def _hold(self, machine: Machine, nonce: str | None) -> None:
        """Refuse a write to a machine someone else holds the lease of (409, Fly's text)."""
        lease = self._lease(machine)
        if lease is not None and nonce != lease.nonce:
            raise ApiError(409, f"aborted: machine ID {machine.id} lease currently held by "
                                f"{LEASE_OWNER}, expires at {_seconds_rfc3339(lease.expires_ms)}")

    def update(self, app: str, machine_id: str, body: Any, nonce: str | None) -> Answer:
        """``POST /apps/{app}/machines/{id}``: run the image the config names.

        The release's image runs the release's behaviour, the previous image the previous
        one; any other is refused (400). Fly's text for an image it cannot resolve is not
        public: assumed.
        """
        machine = self._machine(app, machine_id)
        if not isinstance(body, dict) or not isinstance(body.get("config"), dict):
            raise ApiError(400, "invalid request: config is required (the full machine config)")
        image = body["config"].get("image")
        if not isinstance(image, str) or not image:
            # superfly/flyctl#2310: "failed to launch VM: config.image required".
            raise ApiError(400, "config.image required")
        self._hold(machine, nonce)
        target = self._image(image)
        skip = body.get("skip_launch")
        if skip is not None and not isinstance(skip, bool):
            raise ApiError(400, "invalid request: skip_launch must be a boolean")
        lease_ttl = body.get("lease_ttl")
        if lease_ttl is not None and (isinstance(lease_ttl, bool) or not isinstance(lease_ttl, int)
                                      or not 1 <= lease_ttl <= MAX_LEASE_TTL_S):
            raise ApiError(400, f"invalid request: lease_ttl must be 1 to {MAX_LEASE_TTL_S} seconds")
        self._put_image(machine, target, start=not skip)
        # A client's update is a roll too: one that leaves the machine stopped (skip_launch,
        # as flyctl updates a stopped machine) leaves it to fly-proxy's autostart.
        worlds.after_roll(self.world)
        if lease_ttl is not None:
            # UpdateMachineRequest.lease_ttl: the update takes (or refreshes) the lease and
            # the answer carries its nonce (flyctl's updateMachineByReplace reads it).
            self.acquire_lease(app, machine_id, lease_ttl, "", nonce)
        return 200, self.render(machine)

    def _image(self, ref: str) -> Image:
        world = self.world
        name, _, digest = ref.partition("@")
        for image in (world.release, world.previous):
            if image is None:
                continue
            # By its reference, or by the digest the API served for it (``image_digest``):
            # ``repo:tag@sha256:...`` or ``repo@sha256:...``, as a rollback by digest sends.
            if ref == image.ref or (digest and digest == image_digest(image.ref)
                                    and name in (image.ref, image.ref.rpartition(":")[0])):
                return image
        raise ApiError(400, f'failed to update machine: could not find image "{ref}"')

    def start(self, app: str, machine_id: str, nonce: str | None) -> Answer:
        """``POST .../start``: start a stopped machine (the model's ``wake``)."""
        machine = self._machine(app, machine_id)
        self._hold(machine, nonce)
        previous = machine.state
        worlds.start_machine(machine)
        # superfly/docs machines-resource "Start a Machine" response.
        return 200, {"previous_state": previous, "migrated": False, "new_host": ""}

    def stop(self, app: str, machine_id: str, nonce: str | None) -> Answer:
        """``POST .../stop``: a requested stop of a machine on its way up or up (``sleep``)."""
        machine = self._machine(app, machine_id)
        self._hold(machine, nonce)
        worlds.stop_machine(machine)
        return 200, {"ok": True}

    def restart(self, app: str, machine_id: str, nonce: str | None) -> Answer:
        """``POST .../restart``: stop what runs, then start it again with the same image."""
        machine = self._machine(app, machine_id)
        self._hold(machine, nonce)
        worlds.restart_machine(machine)
        return 200, {"ok": True}

    def create(self, app: str, body: Any) -> Answer:
        """``POST /apps/{app}/machines`` (Machines_create): a new machine on the config's image.

        As ``update``, the image must be the release's or the previous one's; ``skip_launch``
        leaves it ``created``; ``lease_ttl`` is refused (not served: 400).
        """
        if app != self.app:
            raise ApiError(404, "app not found")
        if not isinstance(body, dict) or not isinstance(body.get("config"), dict):
            raise ApiError(400, "invalid request: config is required (the full machine config)")
        image = body["config"].get("image")
        if not isinstance(image, str) or not image:
            raise ApiError(400, "config.image required")
        if len(self.world.machines) >= MAX_MACHINES:
            raise ApiError(400, f"too many machines: the testbed's app holds at most {MAX_MACHINES}")
        target = self._image(image)
        skip = body.get("skip_launch")
        if skip is not None and not isinstance(skip, bool):
            raise ApiError(400, "invalid request: skip_launch must be a boolean")
        self._before_release(target)
        machine = worlds.create_machine(self.world, target, start=not skip)
        self.machines[machine.id] = machine
        self._new_version(machine, target)
        return 200, self.render(machine)

    def destroy(self, app: str, machine_id: str, force: bool, nonce: str | None) -> Answer:
        """``DELETE .../{id}`` (Machines_delete): a stopped machine, or any with ``force``.

        Fly's answer to destroying a running machine without force is not public: assumed
        412 with the rule.
        """
        machine = self._machine(app, machine_id)
        self._hold(machine, nonce)
        if machine.state == "destroyed":
            raise ApiError(404, "not_found: machine not found")
        if machine.state not in ("stopped", "created", "failed", "suspended") and not force:
            raise ApiError(412, f"machine {machine.id} is {machine.state}: stop it first, "
                                "or destroy with force=true")
        worlds.destroy_machine(self.world, machine)
        self._leases.pop(machine.id, None)
        return 200, None  # OpenAPI Machines_delete: 200 with no content

    def cordon(self, app: str, machine_id: str, nonce: str | None, *, on: bool) -> Answer:
        """``POST .../cordon`` and ``.../uncordon``: mark the machine (not public how fly-proxy
        weighs it: the testbed keeps the mark only)."""
        machine = self._machine(app, machine_id)
        self._hold(machine, nonce)
        (worlds.cordon if on else worlds.uncordon)(self.world, machine)
        return 200, None  # OpenAPI Machines_cordon/uncordon: 200 with no content

    def versions_of(self, app: str, machine_id: str) -> Answer:
        """``GET .../versions`` (Machines_list_versions): newest first, each with its image."""
        machine = self._machine(app, machine_id)
        return 200, [{"version": v, "user_config": {"image": ref} if ref else {}}
                     for v, ref in reversed(self._history.get(machine.id, []))]

    def processes(self, app: str, machine_id: str) -> Answer:
        """``GET .../ps`` (Machines_list_processes): the app's one process while started, else
        400. The process's fields are not public: assumed."""
        machine = self._machine(app, machine_id)
        if machine.state != "started":
            raise ApiError(400, f"machine {machine.id} is {machine.state}: no processes")
        return 200, [{"pid": 1, "command": "app", "cpu": 0, "rss": 0, "rtime": 0, "stime": 0,
                      "directory": "/", "listen_sockets": []}]

    def metadata(self, app: str, machine_id: str) -> Answer:
        """``GET .../metadata`` (Machines_show_metadata): the key-value map."""
        machine = self._machine(app, machine_id)
        return 200, dict(self._metadata.get(machine.id, {}))

    def set_metadata(self, app: str, machine_id: str, key: str, value: Any) -> Answer:
        """``POST .../metadata/{key}`` with ``{"value": "..."}``: 204."""
        machine = self._machine(app, machine_id)
        if not isinstance(value, str):
            raise ApiError(400, "invalid request: value must be a string")
        held = self._metadata.setdefault(machine.id, {})
        if len(key) > MAX_METADATA_TEXT or len(value) > MAX_METADATA_TEXT or (
                key not in held and len(held) >= MAX_METADATA):
            raise ApiError(400, f"metadata: at most {MAX_METADATA} keys of {MAX_METADATA_TEXT} "
                                "characters (the testbed's bound)")
        held[key] = value
        return 204, None

    def delete_metadata(self, app: str, machine_id: str, key: str) -> Answer:
        """``DELETE .../metadata/{key}``: 204 (404 for a key it does not have)."""
        machine = self._machine(app, machine_id)
        if self._metadata.get(machine.id, {}).pop(key, None) is None:
            raise ApiError(404, "metadata key not found")
        return 204, None

    # -- leases -------------------------------------------------------------------------------

    def _lease(self, machine: Machine) -> _Lease | None:
        lease = self._leases.get(machine.id)
        if lease is not None and lease.expires_ms <= self.now_ms():
            del self._leases[machine.id]
            return None
        return lease

    def _lease_json(self, machine: Machine, lease: _Lease) -> dict[str, Any]:
        # The real envelope (superfly/docs _machines_lease_create_resp.erb); ``version`` is
        # the machine's instance_id, which spares flyctl a re-read (lease.go AcquireLease).
        return {"status": "success", "data": {
            "nonce": lease.nonce, "expires_at": lease.expires_ms // 1000, "owner": LEASE_OWNER,
            "description": lease.description, "version": self.versions[machine.id].instance_id,
        }}

    def acquire_lease(
        self, app: str, machine_id: str, ttl_s: int | None, description: str, nonce: str | None
    ) -> Answer:
        """``POST .../lease``: take the lease (201), or refresh it with its nonce (200)."""
        machine = self._machine(app, machine_id)
        ttl = DEFAULT_LEASE_TTL_S if ttl_s is None else ttl_s
        if not 1 <= ttl <= MAX_LEASE_TTL_S:
            raise ApiError(400, f"invalid request: ttl must be 1 to {MAX_LEASE_TTL_S} seconds")
        held = self._lease(machine)
        expires = self.now_ms() + ttl * 1000
        if held is not None:
            self._hold(machine, nonce)
            held.expires_ms = expires
            return 200, self._lease_json(machine, held)
        self._nonces += 1
        fresh = hashlib.sha256(f"{self.seed}:{machine.id}:{self._nonces}".encode()).hexdigest()[:12]
        lease = _Lease(fresh, expires, description)
        self._leases[machine.id] = lease
        return 201, self._lease_json(machine, lease)

    def show_lease(self, app: str, machine_id: str) -> Answer:
        """``GET .../lease``: the lease held, or 404 (flyctl matches "lease not found")."""
        machine = self._machine(app, machine_id)
        lease = self._lease(machine)
        if lease is None:
            raise ApiError(404, "lease not found")
        return 200, self._lease_json(machine, lease)

    def release_lease(self, app: str, machine_id: str, nonce: str | None) -> Answer:
        """``DELETE .../lease``: give the lease back (its nonce required)."""
        machine = self._machine(app, machine_id)
        if self._lease(machine) is None:
            raise ApiError(404, "lease not found")
        self._hold(machine, nonce)
        del self._leases[machine.id]
        return 200, {"status": "success", "data": {"ok": True}}

    # -- wait -------------------------------------------------------------------------------

    def wait(
        self, app: str, machine_id: str, states: Sequence[str], timeout_s: int, version: str | None,
        *, from_event_id: str | None = None,
    ) -> Answer | WaitStarted:
        """``GET .../wait``: answer now if the machine is in a wanted state, else hold the request.

        The rule is ``checks.flywait``'s, the one flyctl-smoke reads its looks by: the
        answer comes at the first moment ``reached_at`` finds a wanted state entered since
        the request (checked at each of the machine's changes, ``next_change``), or 408
        with Fly's body once ``timeout_s`` (clamped by the caller) has passed on the
        platform clock. With ``version`` (``instance_id``), only that version counts. With
        ``from_event_id`` (OpenAPI ``Machines_wait``: "Machine event ID to start waiting
        after"), only an event newer than that one counts, before the request or not, and
        not the state the machine is in; the answer's ``event_id`` names the event that
        entered the state (``WaitMachineResponse``).
        """
        machine = self._machine(app, machine_id)
        refused = flywait.refusal(states, version)
        if refused is not None:
            raise ApiError(400, refused)
        if from_event_id is not None and ulid_ms(from_event_id) is None:
            raise ApiError(400, "invalid from_event_id: a 26-character event id (ULID)")
        wanted = flywait.wanted_states(states)
        since_ms = self.now_ms()
        found = self._entered(machine, wanted, since_ms, version, from_event_id)
        if found is not None:
            return self._waited(machine, found)
        pending = WaitStarted(machine, wanted)
        self._wait_numbers += 1
        number = self._wait_numbers
        self._waits[number] = pending
        pending.future.add_done_callback(lambda _done: self._let_go(machine.id, number))
        self._hold_wait(pending, timeout_s, version, since_ms, from_event_id)
        return pending

    @property
    def waits(self) -> tuple[WaitStarted | Held, ...]:
        """The waits and answers held now, oldest first."""
        return tuple(self._waits.values())

    def _entered(
        self, machine: Machine, wanted: tuple[str, ...], since_ms: int, version: str | None,
        after_event: str | None = None,
    ) -> tuple[str, str | None] | None:
        """The wanted state the machine's version counts as entered and the event that entered
        it (None: it is in it with no visible event saying so), if it has."""
        if not flywait.version_matches(version, self.versions[machine.id].instance_id):
            return None
        snapshot = machine.snapshot()
        ids = event_ids(snapshot)
        if after_event is not None:
            # Only what came after that event: not the state the machine is in (``""``).
            after = ids.index(after_event) if after_event in ids else None
            if after is None:
                moment = ulid_ms(after_event) or 0
                after = sum(1 for e in snapshot.events if e.timestamp > moment)
            snapshot = snapshot._replace(state="", events=snapshot.events[:after])
            ids, since_ms = ids[:after], 0
        found = flywait.reached_at(snapshot, wanted, since_ms)
        if found is None:
            return None
        at_ms, state = found
        # The earliest event at that moment that enters the state (newest first: the last).
        entered = [i for e, i in zip(snapshot.events, ids, strict=True) if e.timestamp == at_ms
                   and flywait.enters(e.type, e.status, e.requested_stop, wanted)]
        return state, entered[-1] if entered else (ids[0] if ids else None)

    def _waited(self, machine: Machine, found: tuple[str, str | None]) -> Answer:
        self._look()  # the client learns the machine's state: a look, as a poll's read is
        state, event_id = found
        answer = {"ok": True, "state": state, "version": self.versions[machine.id].instance_id}
        if event_id is not None:
            answer["event_id"] = event_id
        return 200, answer

    def _hold_wait(
        self, pending: WaitStarted, timeout_s: int, version: str | None, since_ms: int,
        after_event: str | None,
    ) -> None:
        """Answer ``pending`` at the first change that enters a wanted state, or at its deadline.

        Callbacks, not a process per wait: one on the deadline, and the machine's one
        watcher (``_changed``) over all its held waits; an answered wait leaves at once, so
        waits on a machine that never changes cost nothing once answered. Each check first
        looks whether the wait has been answered (the driver's close answers every held
        wait 408, then ``finish`` runs the world on): set once, never twice.
        """
        machine, future = pending.machine, pending.future

        def check(at_deadline: bool = False) -> None:
            if future.done():
                return
            # Run after every change of this instant (an update's stop and start): the
            # snapshot shows them all, and reached_at takes the earliest.
            found = self._entered(machine, pending.wanted, since_ms, version, after_event)
            if found is not None:
                future.set_result(self._waited(machine, found))
            elif at_deadline:
                # At the deadline itself: SimPy triggers a Timeout when it is made, so a
                # test of ``triggered`` answered 408 at the first change that was not wanted.
                future.set_result(self.timed_out(pending))

        self.env.timeout(timeout_s).callbacks.append(lambda _event: check(at_deadline=True))
        self._held.setdefault(machine.id, {})[self._wait_numbers] = check
        self._watch(machine)

    def _watch(self, machine: Machine) -> None:
        if machine.id not in self._watched:
            self._watched.add(machine.id)
            machine.next_change().callbacks.append(lambda _event: self._changed(machine))

    def _changed(self, machine: Machine) -> None:
        """The machine changed: each of its held waits looks (in the order they came)."""
        self._watched.discard(machine.id)
        for check in list(self._held.get(machine.id, {}).values()):
            check()
        if self._held.get(machine.id):
            self._watch(machine)

    def _let_go(self, machine_id: str, number: int) -> None:
        self._waits.pop(number, None)
        held = self._held.get(machine_id)
        if held is not None:
            held.pop(number, None)

    def timed_out(self, pending: WaitStarted | Held) -> Answer:
        """A wait's 408, in the words of Fly's (superfly/flyctl#1760); a held answer's own."""
        if isinstance(pending, Held):
            if pending.answer is not None:
                return pending.answer
            if pending.source is not None and pending.source.done():
                return pending.source.result()
            return 503, error_body(503, "the testbed is shutting down")
        wanted = ", ".join(pending.wanted)
        return 408, {"error": f"machine failed to reach desired state, {wanted}, "
                              f"currently {pending.machine.state}", "status": "unknown"}

    # -- the API's own faults ([api]) -----------------------------------------------------------

    def faulted(
        self, call: Callable[[], Answer | WaitStarted], kind: RequestKind, target: str,
        machine_id: str | None, wait_timeout_s: int,
    ) -> Answer | WaitStarted | Held:
        """``call`` through this request's fault (``sim.twin.faults``), drawn now: the order
        the world takes requests in is the order of the draws. A fault answers without the
        call (it was not applied); a latency holds the answer in world time."""
        draw = self.faults.draw(kind)
        table = self.faults.table
        result: Answer | WaitStarted
        machine = self.machines.get(machine_id) if machine_id is not None else None
        if draw.fault == "reset":
            return CLOSED, None  # at once: a reset is not held
        if draw.fault == "error":
            result = table.error_status, error_body(table.error_status)
        elif draw.fault == "throttle":
            result = 429, error_body(429)
        elif draw.fault == "lease_held" and machine is not None:
            expires = self.now_ms() + DEFAULT_LEASE_TTL_S * 1000
            result = 409, error_body(409, f"aborted: machine ID {machine.id} lease currently held "
                                          f"by {OTHER_LEASE_OWNER}, expires at {_seconds_rfc3339(expires)}")
        elif draw.fault == "stale" and target in self._served:
            result = self._served[target]  # what the last same read got: no new look
        else:
            try:
                result = call()
            except ApiError as error:
                result = error.status, error_body(error.status, error.message)
            if kind == "read" and table.stale_share > 0:
                self._keep_read(target, result)
            if draw.fault == "wait_drop" and isinstance(result, WaitStarted):
                self._drop(result, draw.drop_at * wait_timeout_s)
        if draw.latency_s > 0:
            return self._hold_answer(result, draw.latency_s)
        return result

    def _keep_read(self, target: str, result: Answer | WaitStarted) -> None:
        """Keep a read's answer for the next stale read of the same target (bounded)."""
        fits = target in self._served or len(self._served) < MAX_STALE_READS
        if isinstance(result, tuple) and result[0] == 200 and fits:
            self._served[target] = result

    def _drop(self, pending: WaitStarted, after_s: float) -> None:
        """Drop a held wait ``after_s`` from now, if it is still held: closed, or an early 408."""
        close = self.faults.table.wait_drop == "close"

        def drop(_event: simpy.Event) -> None:
            if not pending.future.done():
                pending.future.set_result((CLOSED, None) if close else self.timed_out(pending))

        self.env.timeout(after_s).callbacks.append(drop)

    def _hold_answer(self, result: Answer | WaitStarted, latency_s: float) -> Held:
        """``result`` held ``latency_s`` in world time (a held wait's: from its answer on)."""
        held = Held(result) if isinstance(result, tuple) else Held(source=result.future)
        self._wait_numbers += 1
        number = self._wait_numbers
        self._waits[number] = held
        held.future.add_done_callback(lambda _done: self._waits.pop(number, None))

        def due(answer: Answer) -> None:
            def give(_event: simpy.Event) -> None:
                if not held.future.done():
                    held.future.set_result(answer)
            self.env.timeout(latency_s).callbacks.append(give)

        if isinstance(result, tuple):
            due(result)
        else:  # answered on the world's thread (a change, the deadline, the driver's close)
            result.future.add_done_callback(lambda done: due(done.result()))
        return held

    # -- what happened -----------------------------------------------------------------------

    def outcome(self, bad: bool) -> Mapping[str, Any]:
        """How the client left the machines, and that against the ground truth ``bad``."""
        world = self.world
        # The app's machines: those a client destroyed (a blue-green's old ones) are gone.
        images = [m.image.ref if m.image is not None else None for m in world.machines
                  if m not in world.destroyed]
        release, previous = world.release.ref, world.previous.ref if world.previous else None
        if self.publish_started_ms is None:
            left, outcome = "never updated to the release", "undecided"
        elif all(i == release for i in images):
            left, outcome = "release", "missed" if bad else "passed"
        elif previous is not None and all(i == previous for i in images):
            left, outcome = "previous (rolled back)", "caught" if bad else "false_alarm"
        else:
            left, outcome = "mixed images", "undecided"
        return {"left_running": left, "outcome": outcome,
                "release_crashed_in_this_run": worlds.release_crashes(world)}


def _seconds_rfc3339(ms: int) -> str:
    return format_rfc3339_ms(ms - ms % 1000).replace(".000Z", "Z")
