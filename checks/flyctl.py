"""Fly's ``flyctl deploy`` smoke check, as its source runs it, one machine at a time.

What the check reads of each machine and what it decides; the rolling update's schedule
(pools, cancellation, retries: ``plan.go``) is ``checks.flyrollout``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar, Literal, Protocol

from .failsafe import lost_machines
from .flyrollout import MAX_UNAVAILABLE, Outcome, Rollout
from .flywait import pre_deploy_state, reached_at
from .memo import PerCheck
from .model import Event, Look, MachineSnapshot, Update, Verdict, Wait, in_ms, to_s
from .options import COUNT, INTERVAL, SECONDS, refuse_out_of_range
from .protocol import Step
from .reasons import describe, since
from .started import wait_at_least

#: flyctl's error text when the smoke check fails, verbatim.
CRASHING = "the app appears to be crashing"

#: The source this port follows (superfly/flyctl at this commit; fly-go for the machine type).
FLYCTL_COMMIT = "ad0172face303b77584eea95b46fa3ddc61d5ddd"
FLY_GO_COMMIT = "22d6e518f42d50a81b4485da918741563354b3d3"

#: The pre-deploy states in which flyctl launches (starts and checks) a machine; it skips
#: every other state (``internal/command/deploy/machines_launchinput.go``
#: ``shouldSkipLaunch`` l.296-315: ``started``, ``starting``, ``failed``).
LAUNCHED = ("started", "starting", "failed")
#: The states of a machine asleep at a publish (a look in the publish's own instant).
ASLEEP = ("stopped", "suspended")
#: flyctl's listen-address wait (``machines_deploymachinesapp.go``
#: ``defaultListenAddressCheckTimeout`` l.1276): at least 15 s.
LISTEN_WAIT_S = 15.0


def jittered(low_s: float, high_s: float, seed: int, machine_id: str, attempt: int) -> float:
    """A uniform draw in [low_s, high_s], a pure function of (seed, machine, attempt).

    jpillora/backoff v1.0.0 ``ForAttempt`` draws ``rand.Float64()`` from Go's global source;
    a check must stay a pure function of its inputs, so the draw is a hash of the run's
    seed instead of a random generator's state.
    """
    digest = hashlib.blake2b(f"{seed}:{machine_id}:{attempt}".encode(), digest_size=8).digest()
    unit = int.from_bytes(digest, "big") / 2**64
    return low_s + (high_s - low_s) * unit


def most_recent_start_after_launch(events: Sequence[Event]) -> int | None:
    """fly-go's ``Machine.MostRecentStartTimeAfterLaunch``: a start time, or None for its errors.

    A line-for-line port (superfly/fly-go ``machine_types.go``), quirks kept: the scan over
    the newest-first list overwrites the start and exit indexes on every match until both
    a start and a launch have been seen, so it ends on the *oldest* start and exit newer
    than the newest launch. It errors (None here) when no start is visible, when no launch
    is visible or none precedes a start, and when any exit follows the launch in the list.
    Once the capped list has lost the ``launch`` event, or a machine has exited once since
    it, there is no uptime at all.
    """
    first_start = first_launch = first_exit = -1
    for i, event in enumerate(events):
        if event.type == "start":
            first_start = i
        elif event.type == "launch":
            first_launch = i
        elif event.type == "exit":
            first_exit = i
        if first_start != -1 and first_launch != -1:
            break
    if first_start == -1 or first_start >= first_launch:
        return None
    if first_exit != -1 and first_exit <= first_start:
        return None
    return events[first_start].timestamp


def is_constantly_restarting(machine: MachineSnapshot) -> bool:
    """flyctl's ``isConstantlyRestarting``: the newest exit is a restarting crash past restart 1."""
    newest = machine.newest_exit()
    if newest is None:
        return False
    return (
        not newest.requested_stop
        and newest.restarting
        and newest.restart_count > 1
        # Go reads a missing exit code as 0.
        and (newest.exit_code or 0) != 0
    )


class _Progress(Protocol):
    """Per machine, how far flyctl's steps got (``_steps``): at-publish's, or the rollout's."""

    opened: dict[str, float]  # when its smoke window opened
    due: dict[str, float]  # when its next read is due
    reads: dict[str, int]  # its reads so far
    done: dict[str, Outcome]
    listened: bool  # the one listen-address wait (first machine of the group) was taken


class _Reads:
    """flyctl's per-machine progress over the looks so far, folded look by look."""

    __slots__ = ("done", "due", "existing", "listened", "opened", "reads", "skipped")

    def __init__(self, first: Look, publish_started_ms: int) -> None:
        #: Machines of the publish's first look existed before it; a later one is new.
        self.existing = frozenset(m.id for m in first.machines)
        #: Per machine: its pre-deploy state, when it says skip (shouldSkipLaunch).
        self.skipped: dict[str, str] = {}
        #: Per machine: when its smoke window opened, its next read is due, reads so far.
        self.opened: dict[str, float] = {}
        self.due: dict[str, float] = {}
        self.reads: dict[str, int] = {}
        self.done: dict[str, Outcome] = {}
        #: Whether the one listen-address wait (first machine of the group) was taken.
        self.listened = False
        for machine in first.machines:
            state = pre_deploy_state(machine, publish_started_ms, first.pre_deploy)
            if state is None and first.at_ms == publish_started_ms and machine.state in ASLEEP:
                # The simulator updates and looks in one instant: a machine that instant
                # shows stopped or suspended was not running, and the update left it so.
                state = machine.state
            if state is not None and state not in LAUNCHED:
                self.skipped[machine.id] = state


def _skip_launch(first: Look) -> dict[str, str]:
    """Pre-deploy states that say skip (``shouldSkipLaunch``), in the fleet before any update.

    A machine the first look shows ``created`` with no event is one the deploy creates
    (``origMachineRaw == nil``: launched).
    """
    return {m.id: m.state for m in first.machines
            if m.state not in LAUNCHED and not (m.state == "created" and not m.events)}


@dataclass(frozen=True)
class FlyctlSmokeCheck:
    """flyctl's rolling deploy, a pool at a time: a settled state, then a 10 s smoke check per machine.

    Ported from superfly/flyctl at commit ``ad0172fa`` (FLYCTL_COMMIT), the path
    ``internal/command/deploy/plan.go`` runs (``updateMachinesWRecovery``), line by line
    where one check object can follow it. flyctl takes that path when ``deploy-retries``
    > 0 (``machines_deploymachinesapp.go`` ``updateExistingMachines`` l.603-610); its
    default, ``auto``, reads a LaunchDarkly flag (``deploy.go`` l.626-634) whose exact
    value is not public, but plain ``fly deploy`` does take it: public 2026 deploy logs
    (quoted in issue 30's review) print lines only plan.go writes, "Waiting for machine
    ... to reach a good state" (l.612) and "Unrecoverable error:" (l.542).

    1. **Skipped machines.** ``machines_launchinput.go`` ``shouldSkipLaunch`` l.296-315:
       a machine whose pre-deploy state is not started, starting or failed (``LAUNCHED``)
       is updated without being started, and ``plan.go`` ``updateMachineWChecks`` returns
       success for it before any smoke check. The pre-deploy state is the one before the
       update (``plan.go`` ``originalMachine``), read from the events older than the
       publish (``pre_deploy_state``), never from whatever the first look happened to
       see; only a look in the publish's own instant, as the simulator takes, stands for
       it when no such event is listed. A machine whose pre-deploy state cannot be read is
       checked (fail-safe). A machine that first appears after the first look was created
       by the deploy and is never skipped (``origMachineRaw == nil``; standbys not modelled).
    2. **Wait for a settled state.** ``plan.go`` ``updateMachineWChecks`` calls
       ``waitForMachineState(ctx, lm, ["stopped", "started", "suspended"], md.waitTimeout)``
       (5 min, ``machines.go`` ``DefaultWaitTimeout``), counted from the machine's own update;
       a timeout fails the deploy (retried under 7.; not with ``at-publish``). Each state is a flaps long poll
       (``leasable_machine.go`` ``WaitForState``; fly-go ``flaps_machines_wait.go``:
       server side, clamped to 1-60 s, retried on 408), so with ``wait_reading =
       "long-poll"`` a state entered at any moment counts, judged from the event list
       (``reached_at``); plan.go checks the polls every 1 s (l.791-807), so the wait
       returns at the first ``poll_s`` tick from the publish at or after that moment. ``"sampled"`` keeps this
       port's earlier reading: a state counts only when a look shows it. Undecided
       machines are looked at every ``poll_s``. A machine the platform gave up on reads
       ``stopped`` and so passes this wait.
    3. **Listen-address wait.** ``machines_deploymachinesapp.go``
       ``warnAboutIncorrectListenAddress`` l.1316-1383, called by ``updateMachineWChecks``
       after the settled-state wait whatever state it returned (plan.go discards it:
       ``_, err := waitForMachineState``) and before the smoke check, once per process
       group (the first machine to get there). ``waitForExpectedListenAddresses``
       (l.1391-1480) polls ``GetProcesses`` for up to ``max(15 s, largest grace_period)``:
       it returns at once when the call fails ("let's not fail the whole deployment"),
       and ends once every expected TCP port has a non-loopback listener. A started
       machine is assumed to listen at once (the model has no app that starts before it
       binds). What the call answers for a machine that is not started is not public:
       ``listen_reading = "ps-fails"`` (the default, flyctl's code path for a machine
       with no processes to list: the call fails, no wait) or ``"no-listener"`` (an
       empty process list: the first machine waits ``listen_wait_s`` in full, this
       port's reading before issue 30). ``testbed compare SCENARIO --check flyctl-smoke``
       prints the verdict under each reading. ``listen_wait_s`` 0 turns the wait off.
    4. **Smoke check, per machine.** ``leasable_machine.go`` ``WaitForSmokeChecksToPass``
       l.314-365: a 10 s context opened when the waits above returned; reads at once, then
       after jpillora/backoff v1.0.0's wait (Min 0.5 s, Max 2 s, Factor 2, Jitter:
       uniform in [0.5 s, 0.5 * 2^k s], capped at 2 s), each cut short by the deadline.
       flyctl draws from Go's global ``math/rand``; here the draws come from the run's
       seed: with ``jitter = "seeded"`` (the default) a driver that has a seed hands it
       over (``for_driver``: the simulator's world seed, the test kit's world seed, a
       replay's recorded ``NAME/seed=N``) as ``jitter_seed``, unless one is set; the
       draw is a hash of (seed, machine, read) (``jittered``), so the check stays a pure
       function of its fields and looks. With no seed, or ``jitter = "upper-bounds"``,
       the waits are jpillora's upper bounds (0.5, 1, 2, 2 ... s). A read due between
       looks is taken at the next look.
       Per read: pass once uptime since ``MostRecentStartTimeAfterLaunch`` is over 10 s
       and the machine is not constantly restarting; pass at the deadline
       (``DeadlineExceeded`` returns nil); fail with "the app appears to be crashing" when
       ``isConstantlyRestarting``. Uptime is measured on the platform clock of the
       snapshot (flyctl uses its own clock).
    5. **No rollback.** The rolling strategy (``updateMachinesWRecovery`` with
       ``pushForward``; a smoke-check failure is an ``unrecoverableError``) stops and
       returns the error: machines already updated keep the new release. Hence
       ``rolls_back = False``; only the bluegreen strategy has a ``Rollback``.

    6. **A pool at a time** (``rollout = "pool"``, which ``"driver"`` becomes where the
       driver carries out ``Update`` steps: the simulator, the test kit's
       ``drive_world``). ``plan.go`` ``updateMachinesWRecovery`` l.225-281 and
       ``updateProcessGroup`` l.349-422: the first look is the fleet before any update
       (``md.appState``, the ``originalMachine`` states ``shouldSkipLaunch`` reads);
       cold (skipped) machines are all updated at once (a pool of min(n, 30), each done
       at once); warm ones (every launched machine, ``isWarm`` with l.672-674) go through
       an errgroup limit of ``getPoolSize`` = ceil(``max_unavailable`` x warm) (a count
       when >= 1): the next machine's update starts the moment one in flight finishes its
       steps (``checks.flyrollout.Rollout.fill``). Each machine's wait timeout, listen wait and smoke window
       count from its own update. The first failure cancels the group (l.386-390):
       queued machines are never updated and keep the previous release ("skipping machine
       update due to earlier failure", named in the verdict), updated ones keep the new
       one. Machines start in the look's (id) order; plan.go ranges over a Go map, whose
       order is random (not public: assumed id order, which its retry sorts by).
    7. **Retries** (``plan.go`` l.283-344, ``Rollout.cancel``): a wait timeout is
       recoverable, so the update runs again, the first retry at once and each later one
       1 s after the last failed, while ``attempts <= deploy_retries`` (R + 1 retries for
       R >= 1); then the first error is the verdict. A retry does not update a machine
       again (same config, ``updateMachineConfig`` l.830-832): it waits and checks it
       afresh; a machine that passed stays passed (``healthChecksPassed``); the listen wait
       is not repeated. A smoke-check failure is an ``unrecoverableError`` (l.635): never
       retried. ``deploy_retries`` defaults to ``auto`` in flyctl, a LaunchDarkly flag
       (``deploy.go`` l.626-634), not public: assumed 1; with 0 flyctl takes the legacy
       path (no retry; its other differences are not modelled).

    With ``rollout = "at-publish"`` (replay, a check command, a drive of hand-made looks:
    drivers that cannot update) every machine was updated at the publish and every window
    runs at once, with no retry: a recording's deploy already did its own. ``"pool"`` there
    is refused in one line (``checks.drive``). Not modelled: machine checks and Fly health
    checks that follow the smoke check; lease handling; process groups (one group). The
    publish passes once every machine passed or was skipped, and fails at the first
    machine that fails.

    Blind spots, by construction: a machine the platform gave up on (``restarting =
    false``) passes at the 10 s deadline; so does a crash loop slower than the window, or
    one whose newest exit still has ``restart_count <= 1``; a skipped machine is never
    checked. A capped list that lost the ``launch`` event (or any exit since it) leaves no
    uptime, so the check can only pass by the window running out, which the verdict's
    layer (``window-ran-out``) shows.
    """

    window_s: float = field(default=10.0, metadata=SECONDS)
    min_uptime_s: float = field(default=10.0, metadata=SECONDS)
    backoff_min_s: float = field(default=0.5, metadata=INTERVAL)
    backoff_max_s: float = field(default=2.0, metadata=INTERVAL)
    wait_timeout_s: float = field(default=300.0, metadata=SECONDS)
    wait_states: tuple[str, ...] = ("started", "stopped", "suspended")
    poll_s: float = field(default=1.0, metadata=INTERVAL)
    #: ``long-poll``: a wait state entered at any moment counts (flyctl); ``sampled``: only
    #: one a look catches (this port's reading before issue 19).
    wait_reading: Literal["long-poll", "sampled"] = "long-poll"
    #: The listen-address wait before the first machine's smoke check when it runs in full
    #: (``listen_reading = "no-listener"``); 0: none (no TCP service).
    listen_wait_s: float = field(default=LISTEN_WAIT_S, metadata=SECONDS)
    #: What the listen-address wait meets on a machine that settled in a state but started
    #: (not public, see 3. above): ``ps-fails`` (flyctl's code path on a process list call
    #: that fails: no wait) or ``no-listener`` (an empty list: the full ``listen_wait_s``).
    listen_reading: Literal["ps-fails", "no-listener"] = "ps-fails"
    #: The seed of the smoke backoff's jitter draws; None: the upper bounds, no jitter.
    jitter_seed: int | None = None
    #: ``seeded``: the smoke backoff is jittered as jpillora's is, from ``jitter_seed``
    #: (a driver sets it to the run's seed); ``upper-bounds``: never jittered.
    jitter: Literal["seeded", "upper-bounds"] = "seeded"
    #: ``pool``: the check rolls the release out, a pool at a time (``Update`` steps);
    #: ``at-publish``: the driver updated every machine at the publish (a recording);
    #: ``driver``: ``pool`` when the driver carries out updates, else ``at-publish``.
    rollout: Literal["driver", "pool", "at-publish"] = "driver"
    #: flyctl's ``--max-unavailable`` (``machines.go`` ``DefaultMaxUnavailable`` 0.33):
    #: the share (below 1) or count (1 and above) of warm machines updated at once.
    max_unavailable: float = field(default=MAX_UNAVAILABLE, metadata=INTERVAL)
    #: flyctl's ``--deploy-retries``. Its default ``auto`` reads a LaunchDarkly flag
    #: (``deploy.go`` l.626-634), not public: assumed 1, the least value at which flyctl
    #: takes plan.go's path at all (``updateExistingMachines`` l.603). 0: no retry.
    deploy_retries: int = field(default=1, metadata=COUNT)
    name = "flyctl-smoke"
    #: This object's fold of the looks so far, and the machine ids they showed, kept
    #: between a drive's calls (``checks.memo``): not fields, never compared.
    _reads = PerCheck[_Reads]()
    _rollout = PerCheck[Rollout]()
    _seen = PerCheck[dict[str, int]]()
    #: flyctl's rolling strategy never rolls back (see 5. above).
    rolls_back: ClassVar[bool] = False

    def __post_init__(self) -> None:
        # A scenario file gives a list; keep the check hashable and immutable.
        object.__setattr__(self, "wait_states", tuple(self.wait_states))
        refuse_out_of_range(self)

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Return the next read's wait, or the verdict once every machine is decided."""
        if not looks:
            return Wait(0.0)
        if lost := lost_machines(self.name, looks, self._seen):
            return lost
        if self.rollout == "pool":
            return self._pool_next(publish_started_ms, looks)
        # Keyed by the publish time: a read times out counting from it, so another
        # publish time can end the fold at an earlier look (hypothesis found it).
        key = publish_started_ms
        reads, unseen = self._reads.resume(key, looks, lambda: _Reads(looks[0], publish_started_ms))
        for look in unseen:
            if verdict := self._read(reads, look, publish_started_ms):
                return verdict
        step = self._wait(reads, looks[-1], publish_started_ms)
        self._reads.keep(key, looks, reads)
        return step

    @property
    def deploys(self) -> bool:
        """Whether this check rolls the release out itself (``checks.protocol.Deploying``)."""
        return self.rollout == "pool"

    def for_driver(self, seed: int | None, updates: bool) -> FlyctlSmokeCheck:
        """This check for a run: ``rollout = "driver"`` resolved by what the driver can do,
        and the run's seed as ``jitter_seed`` when the jitter is seeded and none is set."""
        rollout = self.rollout
        if rollout == "driver":
            rollout = "pool" if updates else "at-publish"
        jitter_seed = self.jitter_seed
        if jitter_seed is None and self.jitter == "seeded":
            jitter_seed = seed
        if (rollout, jitter_seed) == (self.rollout, self.jitter_seed):
            return self
        return replace(self, rollout=rollout, jitter_seed=jitter_seed)

    # -- the rolling update, a pool at a time (rollout = "pool") ------------------------

    def _pool_next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """``plan.go`` ``updateMachinesWRecovery``: update a pool at a time, retry, decide."""
        key = ("pool", publish_started_ms)
        state, unseen = self._rollout.resume(
            key, looks, lambda: Rollout(looks[0], _skip_launch(looks[0]),
                                        self.max_unavailable, self.deploy_retries))
        for look in unseen:
            if verdict := self._pool_fold(state, look, publish_started_ms):
                return verdict
        if state.pending:
            step: Step = Update(tuple(state.pending))
        else:
            step = self._pool_wait(state, looks[-1])
        self._rollout.keep(key, looks, state)
        return step

    def _pool_fold(self, r: Rollout, look: Look, publish_started_ms: int) -> Verdict | None:
        """Fold one look into the rollout; a verdict if it decides the deploy."""
        at = look.at_ms
        if not r.updated and not r.done and not r.pending:
            # The first look: the fleet before any update. Pass 0 starts now.
            r.start_pass(at)
            return None
        r.pending = []  # the driver carried them out before this look
        if gave_up := r.retry_due(at):
            return gave_up
        moved = True
        while moved:
            moved = False
            for mid in list(r.running):
                if mid in r.pending:
                    continue  # updated after this look: judged from the next
                machine = look.machine(mid)
                assert machine is not None  # lost_machines ran first
                outcome = self._steps(r, machine, look, r.wait_from[mid])
                if outcome is None:
                    continue
                if outcome == "crashing":
                    # A smoke-check failure is an unrecoverableError (plan.go l.635): no retry.
                    crashed = self._crashing(machine, publish_started_ms)
                    return replace(crashed, reason=crashed.reason + r.skip_note())
                if outcome == "timeout":
                    if r.error is None:  # the first error is the one plan.go returns
                        r.error = self._wait_timeout(machine, publish_started_ms)
                    if r.cancel(at):
                        return replace(r.error, reason=r.error.reason + r.skip_note())
                    moved = True
                    break
                r.running.remove(mid)
                moved = r.fill(at) or moved
        if not r.pending and len(r.done) == len(r.order):
            return self._passed(look, r.done, r.skipped, publish_started_ms)
        return None

    def _steps(self, progress: _Progress, machine: MachineSnapshot, look: Look,
               start: int) -> str | None:
        """One machine's ``updateMachineWChecks`` at this look: None, passed, crashing or timeout.

        ``start``: when its settled-state wait began (its update; the publish at-publish).
        """
        mid, at = machine.id, look.at_ms
        if mid not in progress.opened:
            timeout_ms = start + in_ms(self.wait_timeout_s)
            settled = self._settled_at(machine, look, start)
            if settled is None or settled[0] > timeout_ms:
                return "timeout" if at >= timeout_ms else None
            opened = float(settled[0])
            if not progress.listened:
                # plan.go: once per process group, the first machine to get there.
                progress.listened = True
                if settled[1] != "started" and self.listen_reading == "no-listener":
                    opened += in_ms(self.listen_wait_s)
            # flyctl reads at once when the window opens; a long poll may open it between
            # looks, so that read is taken at this look.
            progress.opened[mid] = progress.due[mid] = opened
            progress.reads[mid] = 0
        # A look cannot be taken in the past: under the long-poll reading the read flyctl
        # takes when the window opens is the first look after it.
        read_once = progress.reads[mid] > 0 or self.wait_reading == "sampled"
        if read_once and at >= progress.opened[mid] + in_ms(self.window_s):
            progress.done[mid] = Outcome(True, "window-ran-out", machine)
            return "passed"
        if at < progress.due[mid]:
            return None
        if is_constantly_restarting(machine):
            return "crashing"
        if self._uptime_ms(machine) > in_ms(self.min_uptime_s):
            progress.done[mid] = Outcome(True, "uptime", machine)
            return "passed"
        # flyctl's reads follow one another by the backoff: anchored at the read's due
        # time, so a read taken late does not shift the ones after it.
        progress.due[mid] += in_ms(self._backoff_s(mid, progress.reads[mid]))
        progress.reads[mid] += 1
        return None

    def _pool_wait(self, r: Rollout, latest: Look) -> Wait:
        """Wait until the soonest read, window end, wait tick or timeout, or the retry."""
        retry = () if r.retry_at is None else (r.retry_at - latest.at_ms,)
        return self._soonest(r, r.running, latest.at_ms, r.wait_from.__getitem__, retry)

    def _soonest(self, progress: _Progress, machine_ids: Iterable[str], at: int,
                 wait_from: Callable[[str], int], more: Iterable[float] = ()) -> Wait:
        """The wait until the soonest step of ``machine_ids``: a read or a window's end once a
        machine's window opened, else the next of waitForMachineState's ticks (every
        ``poll_s`` from ``wait_from(id)``, its update or the publish) or its timeout."""
        window_ms = in_ms(self.window_s)
        waits = list(more)
        for mid in machine_ids:
            if mid in progress.opened:
                waits.append(min(progress.due[mid], progress.opened[mid] + window_ms) - at)
            else:
                start = wait_from(mid)
                tick = self._tick_at_or_after(at + 1, start)
                waits.append(min(tick - at, start + in_ms(self.wait_timeout_s) - at))
        return wait_at_least(to_s(min(waits)))

    def _settled_at(
        self, machine: MachineSnapshot, look: Look, publish_started_ms: int
    ) -> tuple[int, str] | None:
        """When, and in which state, the settled-state wait returned, if it has by this look."""
        if self.wait_reading == "sampled":
            return (look.at_ms, machine.state) if machine.state in self.wait_states else None
        entered = reached_at(machine, self.wait_states, publish_started_ms)
        if entered is None:
            return None
        # plan.go ``waitForMachineState`` l.791-807 sees a finished long poll only at its
        # 1 s ticks from the wait's start: flyctl goes on at the first tick at or after
        # the entry, in the state the machine has then (tests/test_oracle.py found it).
        tick = self._tick_at_or_after(entered[0], publish_started_ms)
        if tick > look.at_ms:
            return None
        return (tick, machine.state if tick == look.at_ms else entered[1])

    def _tick_at_or_after(self, at_ms: float, publish_started_ms: int) -> int:
        poll_ms = in_ms(self.poll_s)
        ticks = math.ceil(round((at_ms - publish_started_ms) / poll_ms, 9))
        return publish_started_ms + ticks * round(poll_ms)

    def _backoff_s(self, machine_id: str, attempt: int) -> float:
        """The wait after read ``attempt``: jpillora/backoff's, capped at ``backoff_max_s``."""
        high = self.backoff_min_s * 2.0**attempt
        if self.jitter == "seeded" and self.jitter_seed is not None and high > self.backoff_min_s:
            high = jittered(self.backoff_min_s, high, self.jitter_seed, machine_id, attempt)
        return min(high, self.backoff_max_s)

    def _read(self, state: _Reads, look: Look, publish_started_ms: int) -> Verdict | None:
        """Take one look's reads of every undecided machine; a verdict if one decides the deploy."""
        done = state.done
        for machine in look.machines:
            if machine.id in done:
                continue
            if machine.id in state.skipped:
                done[machine.id] = Outcome(True, "skipped", machine)
                continue
            step = self._steps(state, machine, look, publish_started_ms)
            if step == "timeout":
                return self._wait_timeout(machine, publish_started_ms)
            if step == "crashing":
                return self._crashing(machine, publish_started_ms)
        if all(m.id in done for m in look.machines):
            return self._passed(look, done, state.skipped, publish_started_ms)
        return None

    def _wait(self, state: _Reads, latest: Look, publish_started_ms: int) -> Wait:
        """Wait until the soonest read or deadline of a machine still undecided."""
        undecided = [m.id for m in latest.machines if m.id not in state.done]
        return self._soonest(state, undecided, latest.at_ms, lambda _: publish_started_ms)

    def _uptime_ms(self, machine: MachineSnapshot) -> int:
        started = most_recent_start_after_launch(machine.events)
        # flyctl counts an error from MostRecentStartTimeAfterLaunch as zero uptime.
        return 0 if started is None else machine.at_ms - started

    def _crashing(self, machine: MachineSnapshot, publish_started_ms: int) -> Verdict:
        newest = machine.newest_exit()
        assert newest is not None
        return Verdict(
            False,
            f"{CRASHING}: machine {machine.id}'s newest exit at "
            f"{since(newest.timestamp, publish_started_ms)} has exit code {newest.exit_code}, "
            f"restarting = true and restart_count = {newest.restart_count} (> 1); "
            f"read the exit cause with `fly logs -i {machine.id}`",
            machine.id,
            layer="constantly-restarting",
        )

    def _wait_timeout(self, machine: MachineSnapshot, publish_started_ms: int) -> Verdict:
        states = ", ".join(self.wait_states)
        return Verdict(
            False,
            f"timeout reached waiting for machine {machine.id} to reach one of the states "
            f"{states} within {self.wait_timeout_s:g} s ({describe(machine, publish_started_ms)}); "
            "raise flyctl's --wait-timeout only if the app is slow to boot",
            machine.id,
            layer="wait-timeout",
        )

    def _passed(
        self, look: Look, done: dict[str, Outcome], states: dict[str, str],
        publish_started_ms: int,
    ) -> Verdict:
        outcomes = [done[m.id] for m in look.machines]
        ran_out = [o.machine for o in outcomes if o.layer == "window-ran-out"]
        skipped = [f"{o.machine.id} ({states[o.machine.id]})" for o in outcomes
                   if o.layer == "skipped"]
        skip_note = (
            "; not started and not checked, as flyctl leaves a machine whose state before the "
            f"publish was not started, starting or failed: {', '.join(skipped)}"
            if skipped
            else ""
        )
        if ran_out:
            notes = [
                f"{m.id}: {describe(m, publish_started_ms)}"
                + (
                    " - the platform gave up restarting it, which the smoke check does not act on"
                    if m.gave_up
                    else ""
                )
                for m in ran_out
            ]
            return Verdict(
                True,
                f"flyctl's {self.window_s:g} s smoke window ran out without a constant restart, "
                "so it passes by design; machines with no proven uptime at their last read: "
                + "; ".join(notes)
                + skip_note,
                layer="window-ran-out",
            )
        if len(skipped) == len(outcomes):
            return Verdict(
                True,
                "no machine was started, starting or failed before the publish, so flyctl "
                f"updated them without starting them and ran no smoke check{skip_note}",
                layer="skipped",
            )
        return Verdict(
            True,
            f"every checked machine has been up over {self.min_uptime_s:g} s since its most "
            "recent start after launch and none is constantly restarting "
            f"(flyctl smoke check){skip_note}",
            layer="uptime",
        )


@dataclass(frozen=True)
class FlyctlSampledSmokeCheck(FlyctlSmokeCheck):
    """``flyctl-smoke`` with the sampled wait reading, under its own name, to compare the two.

    ``testbed checks --check flyctl-smoke --check
    platform_testbed.checks.flyctl:FlyctlSampledSmokeCheck`` shows both readings.
    """

    wait_reading: Literal["long-poll", "sampled"] = "sampled"
    name = "flyctl-smoke-sampled"


@dataclass(frozen=True)
class FlyctlNoListenerSmokeCheck(FlyctlSmokeCheck):
    """``flyctl-smoke`` with the no-listener reading of the listen-address wait, under its own name.

    Beside ``flyctl-smoke`` in one sweep or region, each world gives both readings:
    ``checks = ["flyctl-smoke", "platform_testbed.checks.flyctl:FlyctlNoListenerSmokeCheck"]``.
    """

    listen_reading: Literal["ps-fails", "no-listener"] = "no-listener"
    name = "flyctl-smoke-no-listener"
