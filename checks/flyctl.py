"""Fly's ``flyctl deploy`` smoke check, as its source runs it, one machine at a time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from .failsafe import lost_machines
from .memo import PerCheck
from .model import Event, Look, MachineSnapshot, Verdict, Wait
from .options import INTERVAL, SECONDS, refuse_out_of_range
from .protocol import Step
from .reasons import describe, since
from .started import wait_at_least

#: flyctl's error text when the smoke check fails, verbatim.
CRASHING = "the app appears to be crashing"

#: The source this port follows (superfly/flyctl at this commit; fly-go for the machine type).
FLYCTL_COMMIT = "ad0172face303b77584eea95b46fa3ddc61d5ddd"
FLY_GO_COMMIT = "22d6e518f42d50a81b4485da918741563354b3d3"

#: States in which flyctl leaves a machine as it is (``shouldSkipLaunch``): the pre-deploy
#: state is neither started, starting nor failed. Only the two a machine can be in when a
#: publish finds it asleep are modelled.
ASLEEP = ("stopped", "suspended")


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


@dataclass(frozen=True, slots=True)
class _Outcome:
    """How flyctl's per-machine steps ended for one machine, at which look and why."""

    passed: bool
    layer: str
    machine: MachineSnapshot


class _Reads:
    """flyctl's per-machine progress over the looks so far, folded look by look."""

    __slots__ = ("asleep", "done", "due", "opened", "reads")

    def __init__(self, first: Look) -> None:
        #: Machines asleep in the publish's first look: skipped, never checked.
        self.asleep = frozenset(m.id for m in first.machines if m.state in ASLEEP)
        #: Per machine: when its smoke window opened, its next read is due, reads so far.
        self.opened: dict[str, int] = {}
        self.due: dict[str, float] = {}
        self.reads: dict[str, int] = {}
        self.done: dict[str, _Outcome] = {}


@dataclass(frozen=True)
class FlyctlSmokeCheck:
    """flyctl's rolling deploy, per machine: wait for a settled state, then a 10 s smoke check.

    Ported from superfly/flyctl at commit ``ad0172fa`` (FLYCTL_COMMIT), line by line where
    one check object can follow it:

    1. **Skipped machines.** ``internal/command/deploy/machines_launchinput.go``
       ``shouldSkipLaunch``: a machine whose pre-deploy state is not started, starting or
       failed (asleep: stopped or suspended) is updated without being started, and
       ``plan.go`` ``updateMachineWChecks`` returns success for it before any smoke check
       (``machines_deploymachinesapp.go`` ``waitForMachine`` does the same on the other
       path). Here the pre-deploy state is the machine's state in the publish's first look
       (taken when the publish begins); a machine that first appears later was created by
       the deploy and is never skipped (``origMachineRaw == nil``; standbys not modelled).
    2. **Wait for a settled state.** ``plan.go`` ``updateMachineWChecks`` calls
       ``waitForMachineState(ctx, lm, ["stopped", "started", "suspended"], md.waitTimeout)``;
       ``waitTimeout`` defaults to 5 min (``machines.go`` ``DefaultWaitTimeout``) and a
       timeout fails the deploy. ``WaitForState`` long-polls flaps, so a state is seen at
       the first look that shows it; undecided machines are looked at every ``poll_s``
       (``waitForMachineState`` sleeps 1 s between checks). A machine the platform gave
       up on reads ``stopped`` and so passes this wait. With ``--deploy-retries 0``
       flyctl takes the other path (``machines_deploymachinesapp.go`` ``waitForMachine``:
       ``WaitForState(started)`` only): set ``wait_states = ["started"]`` to model it.
       Which path runs by default depends on a LaunchDarkly flag (``deploy.go``,
       ``deploy-retries`` = ``auto``) whose value is not public.
    3. **Smoke check, per machine.** ``internal/machine/leasable_machine.go``
       ``WaitForSmokeChecksToPass``: a 10 s context opened when that machine settled;
       reads at once, then after a backoff of 500 ms doubling to 2 s (jitter dropped, so
       runs stay deterministic), each cut short by the deadline. Per read: pass once
       uptime since ``MostRecentStartTimeAfterLaunch`` is over 10 s and the machine is not
       constantly restarting; pass at the deadline (``DeadlineExceeded`` returns nil);
       fail with "the app appears to be crashing" when ``isConstantlyRestarting``. Uptime
       is measured on the platform clock of the snapshot (flyctl uses its own clock).
    4. **No rollback.** The rolling strategy (``updateMachinesWRecovery`` with
       ``pushForward``; a smoke-check failure is an ``unrecoverableError``) stops and
       returns the error: machines already updated keep the new release. Hence
       ``rolls_back = False``; only the bluegreen strategy has a ``Rollback``.

    Not modelled: batches (``maxUnavailable`` 0.33, a one-machine spearhead, 30 cold
    machines at a time): the simulator updates every machine at the publish, so every
    machine's window runs at once; machine checks and Fly health checks that follow the
    smoke check; lease handling. The publish passes once every machine passed or was
    skipped, and fails at the first machine that fails.

    Blind spots, by construction: a machine the platform gave up on (``restarting =
    false``) passes at the 10 s deadline; so does a crash loop slower than the window, or
    one whose newest exit still has ``restart_count <= 1``; a sleeping machine is never
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
    name = "flyctl-smoke"
    #: This object's fold of the looks so far, and the machine ids they showed, kept
    #: between a drive's calls (``checks.memo``): not fields, never compared.
    _reads = PerCheck[_Reads]()
    _seen = PerCheck[dict[str, int]]()
    #: flyctl's rolling strategy never rolls back (see 4. above).
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
        # Keyed by the publish time: a read times out counting from it, so another
        # publish time can end the fold at an earlier look (hypothesis found it).
        key = publish_started_ms
        reads, unseen = self._reads.resume(key, looks, lambda: _Reads(looks[0]))
        for look in unseen:
            if verdict := self._read(reads, look, publish_started_ms):
                return verdict
        step = self._wait(reads, looks[-1], publish_started_ms)
        self._reads.keep(key, looks, reads)
        return step

    def _read(self, state: _Reads, look: Look, publish_started_ms: int) -> Verdict | None:
        """Take one look's reads of every undecided machine; a verdict if one decides the deploy."""
        opened, due, reads, done = state.opened, state.due, state.reads, state.done
        window_ms = self.window_s * 1000
        for machine in look.machines:
            key = machine.id
            if key in done:
                continue
            if key in state.asleep:
                done[key] = _Outcome(True, "skipped", machine)
                continue
            if key not in opened:
                if machine.state in self.wait_states:
                    opened[key] = look.at_ms
                    due[key] = look.at_ms
                    reads[key] = 0
                elif look.at_ms - publish_started_ms >= self.wait_timeout_s * 1000:
                    return self._wait_timeout(machine, publish_started_ms)
                else:
                    continue
            if look.at_ms >= opened[key] + window_ms:
                done[key] = _Outcome(True, "window-ran-out", machine)
                continue
            if look.at_ms < due[key]:
                continue
            crashing = is_constantly_restarting(machine)
            if not crashing and self._uptime_ms(machine) > self.min_uptime_s * 1000:
                done[key] = _Outcome(True, "uptime", machine)
            elif crashing:
                return self._crashing(machine, publish_started_ms)
            else:
                backoff_s = self.backoff_min_s * 2 ** reads[key]
                due[key] = look.at_ms + min(backoff_s, self.backoff_max_s) * 1000
                reads[key] += 1
        if all(m.id in done for m in look.machines):
            return self._passed(look, done, publish_started_ms)
        return None

    def _wait(self, state: _Reads, latest: Look, publish_started_ms: int) -> Wait:
        """Wait until the soonest read or deadline of a machine still undecided."""
        opened, due, done = state.opened, state.due, state.done
        window_ms = self.window_s * 1000
        waits = []
        for machine in latest.machines:
            if machine.id in done:
                continue
            if machine.id in opened:
                deadline = opened[machine.id] + window_ms
                waits.append(min(due[machine.id], deadline) - latest.at_ms)
            else:
                left_ms = publish_started_ms + self.wait_timeout_s * 1000 - latest.at_ms
                waits.append(min(self.poll_s * 1000, left_ms))
        return wait_at_least(min(waits) / 1000)

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

    def _passed(self, look: Look, done: dict[str, _Outcome], publish_started_ms: int) -> Verdict:
        outcomes = [done[m.id] for m in look.machines]
        ran_out = [o.machine for o in outcomes if o.layer == "window-ran-out"]
        skipped = [o.machine.id for o in outcomes if o.layer == "skipped"]
        skip_note = (
            f"; not started and not checked, as flyctl leaves sleeping machines: {', '.join(skipped)}"
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
                "every machine was asleep when the publish began, so flyctl updated them "
                f"without starting them and ran no smoke check{skip_note}",
                layer="skipped",
            )
        return Verdict(
            True,
            f"every checked machine has been up over {self.min_uptime_s:g} s since its most "
            "recent start after launch and none is constantly restarting "
            f"(flyctl smoke check){skip_note}",
            layer="uptime",
        )
