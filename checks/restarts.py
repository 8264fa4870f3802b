"""A monotonic restart counter compared between looks (Kubernetes, Nomad)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .failsafe import lost_machines
from .memo import PerCheck
from .model import Look, MachineSnapshot, Verdict, Wait, to_s
from .options import INTERVAL, SECONDS, refuse_out_of_range
from .protocol import Step
from .reasons import describe, since
from .started import awaiting, wait_at_least


class _Watch:
    """Each machine's counter at its first look, and when all first read started."""

    __slots__ = ("baseline", "started_at")

    def __init__(self) -> None:
        self.baseline: dict[str, MachineSnapshot] = {}
        self.started_at: int | None = None


@dataclass(frozen=True)
class RestartCounterCheck:
    """Fail if any machine's restart counter rose since the publish's first look.

    Models what Kubernetes' ``containerStatuses[].restartCount`` and Nomad's task state
    ``Restarts`` give a deploy gate: a counter the platform only ever increments, kept
    outside any capped event list, so a crash loop cannot hide in a sliding window. The
    baseline is each machine's counter at the first look it appears in (taken when the
    publish begins); any rise at a later look fails. Otherwise it waits (every ``poll_s``,
    up to ``start_timeout_s``) until every machine reads started, keeps looking for
    ``look_delay_s`` more, and passes if all still read started with unchanged counters.
    A machine that goes down with its counter unchanged (the platform did not restart
    it) fails too.

    Where the platform exposes no counter (``MachineSnapshot.restart_counter is None``) the
    check **fails** at the first look, saying so. A gate that cannot see its signal must
    not approve: a wrong pass becomes the incident's late failure (skipped rollback, site
    down); a wrong fail costs one rollback, and the reason tells the operator to enable
    the counter (the simulator's ``platform.restart_counter = true``) or use another check.

    Blind spot: a crash later than ``look_delay_s`` after every machine read started.
    """

    look_delay_s: float = field(default=5.0, metadata=SECONDS)
    start_timeout_s: float = field(default=60.0, metadata=SECONDS)
    poll_s: float = field(default=1.0, metadata=INTERVAL)
    name = "restart-counter"
    #: This object's fold of the looks so far, and the machine ids they showed, kept
    #: between a drive's calls (``checks.memo``): not fields, never compared.
    _watches = PerCheck[_Watch]()
    _seen = PerCheck[dict[str, int]]()

    def __post_init__(self) -> None:
        refuse_out_of_range(self)

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Return the next wait, or a verdict from the counters and states seen so far."""
        if not looks:
            return Wait(0.0)
        if lost := lost_machines(self.name, looks, self._seen):
            return lost
        key = publish_started_ms
        watch, unseen = self._watches.resume(key, looks, _Watch)
        for look in unseen:
            if verdict := self._see(watch, look, publish_started_ms):
                return verdict
        step = self._judge(watch.started_at, publish_started_ms, looks)
        if isinstance(step, Wait):
            self._watches.keep(key, looks, watch)
        return step

    def _see(self, watch: _Watch, look: Look, publish_started_ms: int) -> Verdict | None:
        """Fold one look: a verdict if a counter moved or a machine went down, else None."""
        baseline, started_at = watch.baseline, watch.started_at
        all_started = all(m.state == "started" for m in look.machines)
        for machine in look.machines:
            first = baseline.setdefault(machine.id, machine)
            if verdict := self._compare(first, machine, publish_started_ms):
                return verdict
            if started_at is not None and machine.state != "started":
                return Verdict(
                    False,
                    f"machine {machine.id} read started at "
                    f"{since(started_at, publish_started_ms)} but not at "
                    f"{since(look.at_ms, publish_started_ms)} "
                    f"({describe(machine, publish_started_ms)}) and its restart counter "
                    f"is unchanged at {machine.restart_counter}: it went down and the "
                    "platform did not restart it",
                    machine.id,
                    layer="went-down",
                )
        if started_at is None and all_started:
            watch.started_at = look.at_ms
        return None

    def _judge(self, started_at: int | None, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        if started_at is None:
            return awaiting(self, publish_started_ms, looks[-1])
        watched_s = to_s(looks[-1].at_ms - started_at)
        if watched_s >= self.look_delay_s:
            counters = ", ".join(f"{m.id} {m.restart_counter}" for m in looks[-1].machines)
            return Verdict(
                True,
                f"no restart counter rose since the publish began and every machine stayed "
                f"started for {self.look_delay_s:g} s after all read started ({counters})",
                layer="restart-counter",
            )
        return wait_at_least(min(self.poll_s, self.look_delay_s - watched_s))

    def _compare(
        self, first: MachineSnapshot, now: MachineSnapshot, publish_started_ms: int
    ) -> Verdict | None:
        if now.restart_counter is None or first.restart_counter is None:
            return Verdict(
                False,
                f"the platform exposes no restart counter for machine {now.id} "
                "(restart_counter is absent), so this check cannot judge the publish; "
                "enable one (simulator: platform.restart_counter = true) or use a check "
                "that reads the event list",
                now.id,
                layer="no-counter",
                judged=False,
            )
        before, after = first.restart_counter, now.restart_counter
        if after < before:
            return Verdict(
                False,
                f"machine {now.id}'s restart counter went backwards ({before} -> {after}) "
                "between looks: it was replaced or the counter is not monotonic, so restarts "
                "cannot be counted",
                now.id,
                layer="counter-reset",
            )
        if after > before:
            return Verdict(
                False,
                f"machine {now.id} restarted {after - before} time(s) since the publish began "
                f"(restart counter {before} -> {after} by "
                f"{since(now.at_ms, publish_started_ms)}; {describe(now, publish_started_ms)}): "
                "the app is crashing; check its logs for the exit cause",
                now.id,
                layer="restart-counter",
            )
        return None
