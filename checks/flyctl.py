"""Fly's ``flyctl deploy`` smoke check, as its source publishes it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from checks.model import Event, Look, MachineSnapshot, Verdict
from checks.protocol import Step
from checks.reasons import describe, since
from checks.started import await_started, wait_at_least

#: flyctl's error text when the smoke check fails, verbatim.
CRASHING = "the app appears to be crashing"


def most_recent_start_after_launch(events: Sequence[Event]) -> int | None:
    """flyctl's ``Machine.MostRecentStartTimeAfterLaunch``: a start time, or None for its errors.

    A line-for-line port, quirks kept: the scan over the newest-first list overwrites the
    start and exit indexes on every match until both a start and a launch have been seen,
    so it ends on the *oldest* start and exit newer than the newest launch. It errors (None
    here) when no start is visible, when no launch is visible or none precedes a start, and
    when any exit follows the launch in the list. Once the capped list has lost the
    ``launch`` event, or a machine has exited once since it, there is no uptime at all.
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


@dataclass(frozen=True)
class FlyctlSmokeCheck:
    """Fly's deploy smoke check: poll for up to 10 s; fail only on "constantly restarting".

    Modelled on superfly/flyctl ``internal/machine/leasable_machine.go``
    (``WaitForSmokeChecksToPass`` and ``isConstantlyRestarting``) and the machine type's
    ``MostRecentStartTimeAfterLaunch`` (flyctl ``api/machine_types.go``, since moved to
    superfly/fly-go ``machine_types.go``). flyctl first waits for the machine to reach
    ``started``, then, within a 10 s context, reads the machine with a backoff (500 ms
    doubling to 2 s) and per read:

    - passes once uptime since ``MostRecentStartTimeAfterLaunch`` is over 10 s and the
      machine is not constantly restarting;
    - passes when the 10 s context expires (``DeadlineExceeded`` returns nil);
    - fails with "the app appears to be crashing" when the newest ``exit`` event is not a
      requested stop, has ``restarting = true``, ``request.restart_count > 1`` and a
      non-zero exit code.

    Here the window opens at the first look where every machine reads started (polled
    every ``poll_s`` up to ``start_timeout_s``, the testbed's stand-in for flyctl's
    ``WaitForState``); each machine passes on its own, the publish once all have; the
    backoff has no jitter, so runs stay deterministic; uptime is measured on the
    platform clock of the snapshot. Older flyctl releases lack the uptime branch: they
    only fail on a constant restart and otherwise pass when the window runs out.

    Blind spots, by construction: a machine the platform gave up on (``restarting =
    false``) never fails it; nor does a crash loop slower than the window, nor one whose
    newest exit still has ``restart_count <= 1``. A capped list that lost the ``launch``
    event (or any exit since it) leaves no uptime, so the check can only pass by the
    window running out, which the verdict's layer (``window-ran-out``) shows.
    """

    window_s: float = 10.0
    min_uptime_s: float = 10.0
    backoff_min_s: float = 0.5
    backoff_max_s: float = 2.0
    start_timeout_s: float = 60.0
    poll_s: float = 1.0
    name = "flyctl-smoke"

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Return the next read's wait, or the smoke check's verdict."""
        found = await_started(self, publish_started_ms, looks)
        if not isinstance(found, int):
            return found
        smoke = looks[found:]
        deadline_ms = smoke[0].at_ms + self.window_s * 1000
        passed: set[str] = set()
        for look in smoke:
            if look.at_ms >= deadline_ms:
                return self._window_ran_out(look, passed, publish_started_ms)
            for machine in look.machines:
                if machine.id in passed:
                    continue
                crashing = is_constantly_restarting(machine)
                if not crashing and self._uptime_ms(machine) > self.min_uptime_s * 1000:
                    passed.add(machine.id)
                elif crashing:
                    return self._crashing(machine, publish_started_ms)
            if all(m.id in passed for m in look.machines):
                return Verdict(
                    True,
                    f"every machine has been up over {self.min_uptime_s:g} s since its most "
                    "recent start after launch and none is constantly restarting "
                    "(flyctl smoke check)",
                    layer="uptime",
                )
        delay_s = min(self.backoff_min_s * 2 ** (len(smoke) - 1), self.backoff_max_s)
        return wait_at_least(min(delay_s, (deadline_ms - smoke[-1].at_ms) / 1000))

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

    def _window_ran_out(self, look: Look, passed: set[str], publish_started_ms: int) -> Verdict:
        unproven = [m for m in look.machines if m.id not in passed]
        notes = [
            f"{m.id}: {describe(m, publish_started_ms)}"
            + (
                " - the platform gave up restarting it, which the smoke check does not act on"
                if m.gave_up
                else ""
            )
            for m in unproven
        ]
        return Verdict(
            True,
            f"flyctl's {self.window_s:g} s smoke window ran out without a constant restart, "
            "so it passes by design; machines with no proven uptime at the last read: "
            + ("; ".join(notes) if notes else "none"),
            layer="window-ran-out",
        )
