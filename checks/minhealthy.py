"""Kubernetes ``minReadySeconds`` / Nomad ``min_healthy_time``: stay up T seconds in a row."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .failsafe import lost_machines
from .memo import PerCheck
from .model import Look, MachineSnapshot, Verdict, Wait, in_ms, to_s
from .options import INTERVAL, SECONDS, refuse_out_of_range
from .protocol import Step
from .reasons import describe, since
from .started import wait_at_least

RULES = ("nomad", "kubernetes")


def newest_start_ms(machine: MachineSnapshot) -> int | None:
    """The timestamp of the newest ``start`` event still in the list."""
    return next((e.timestamp for e in machine.events if e.type == "start"), None)


@dataclass(slots=True)
class _Run:
    """One machine's current run of ``started`` across the looks, built look by look."""

    touched: bool = False
    start: int | None = None
    unbroken: bool = False
    last: MachineSnapshot | None = None

    def see(self, machine: MachineSnapshot, publish_started_ms: int) -> None:
        """Fold the next snapshot of this machine into the run."""
        if machine.events and machine.events[0].timestamp >= publish_started_ms:
            # The newest event is the publish's doing (update, launch, start, exit).
            self.touched = True
        if machine.state == "started":
            start = newest_start_ms(machine)
            if start != self.start:
                # A new run; it is unbroken only if no earlier look came after its start
                # without showing it.
                self.start = start
                self.unbroken = start is not None and (self.last is None or self.last.at_ms <= start)
        # A look in the same millisecond as the start cannot tell which came first.
        elif self.start is not None and machine.at_ms > self.start:
            self.unbroken = False
        self.last = machine

    def up_ms(self, publish_started_ms: int) -> int | None:
        """How long the latest run has lasted, if it is an unbroken run the publish began."""
        last = self.last
        if (
            last is None
            or last.state != "started"
            or not self.unbroken
            or self.start is None
            or self.start < publish_started_ms
        ):
            return None
        return last.at_ms - self.start


@dataclass(slots=True)
class _Fold:
    """Every machine's run and the last look that made progress, folded look by look."""

    last_progress_ms: int
    runs: dict[str, _Run] = field(default_factory=dict)
    ready_before: int = 0
    available_before: int = 0

    def see(self, look: Look, publish_started_ms: int, need_ms: float) -> None:
        """Fold the next look: each machine's run, and whether the look made progress."""
        runs = self.runs
        ready = available = 0
        for machine in look.machines:
            run = runs.get(machine.id)
            if run is None:
                run = runs[machine.id] = _Run()
            run.see(machine, publish_started_ms)
            up = run.up_ms(publish_started_ms)
            if up is not None and run.touched:
                ready += 1
                available += up >= need_ms
        if ready > self.ready_before or available > self.available_before:
            self.last_progress_ms = look.at_ms
        self.ready_before, self.available_before = ready, available


@dataclass(frozen=True)
class MinHealthyTimeCheck:
    """Pass once every machine the publish touched has stayed ``started`` T seconds in a row.

    The timer starts at the machine's newest ``start`` event after the publish began and
    restarts whenever the newest start changes or a look reads the machine in any other
    state; looks are polled every ``poll_s`` (assumed: 1 s). "Healthy" and "ready" here are
    "reads started": the testbed has no readiness probe or health check, so an app that is
    up but not serving passes. Only machines the publish touched (their newest event is at
    or after the publish) are judged: a machine it left alone is neither waited for nor
    failed. The deadline depends on ``rule``:

    - ``"nomad"`` (the default): Nomad's ``update`` block (developer.hashicorp.com
      ``nomad/docs/job-specification/update``): ``min_healthy_time`` (default 10 s, this
      check's ``min_healthy_s``) and ``healthy_deadline`` (default 5 m,
      ``healthy_deadline_s``) measured from the placement, here the publish. With
      ``health_check = "task_states"`` an allocation is unhealthy as soon as a task has
      failed for good (its restart policy exhausted): a machine the platform gave up on
      fails at once, before the deadline (layer ``task-failed``).
    - ``"kubernetes"``: a Deployment's ``minReadySeconds`` (Kubernetes' default is 0; this
      check keeps 10 s, assumed, since 0 passes any machine seen started) and
      ``progressDeadlineSeconds`` (default 600 s, ``progress_deadline_s``) measured since
      the last progress, as kubernetes ``pkg/controller/deployment/util/
      deployment_util.go`` ``DeploymentProgressing`` / ``DeploymentTimedOut`` define it:
      progress is a rise in updated, ready or available replicas. Here a look makes
      progress when more touched machines read started with a start since the publish
      (ready), or more have been up T seconds (available), than at the previous look.
      Kubernetes never gives up on a crash-looping pod, and every restart that reads
      ready is progress, so a crash loop seen started now and then can run past any
      deadline: the check then reaches no verdict (the simulator's horizon ends it).

    Guarantee: it never passes a machine whose newest start is younger than
    ``min_healthy_s`` at the deciding look, whatever the event-list cap, because the
    newest start is the event a capped list keeps. Blind spot: an app that crashes more
    than ``min_healthy_s`` after each start passes. Linear in machines and looks.
    """

    min_healthy_s: float = field(default=10.0, metadata=SECONDS)
    healthy_deadline_s: float = field(default=300.0, metadata=SECONDS)
    progress_deadline_s: float = field(default=600.0, metadata=SECONDS)
    rule: str = "nomad"
    poll_s: float = field(default=1.0, metadata=INTERVAL)
    name = "min-healthy-time"
    #: This object's fold of the looks so far, and the machine ids they showed, kept
    #: between a drive's calls (``checks.memo``): not fields, never compared.
    _folds = PerCheck[_Fold]()
    _seen = PerCheck[dict[str, int]]()

    def __post_init__(self) -> None:
        refuse_out_of_range(self)
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {', '.join(RULES)}, not {self.rule!r}")

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Return the next poll, or the verdict once all are healthy or the deadline passed."""
        if not looks:
            return Wait(0.0)
        if lost := lost_machines(self.name, looks, self._seen):
            return lost
        need_ms = in_ms(self.min_healthy_s)
        key = publish_started_ms
        fold, unseen = self._folds.resume(key, looks, lambda: _Fold(publish_started_ms))
        for look in unseen:
            fold.see(look, publish_started_ms, need_ms)
        step = self._judge(fold, publish_started_ms, looks, need_ms)
        if isinstance(step, Wait):
            self._folds.keep(key, looks, fold)
        return step

    def _judge(self, fold: _Fold, publish_started_ms: int, looks: Sequence[Look], need_ms: float) -> Step:
        runs, last_progress_ms = fold.runs, fold.last_progress_ms
        latest = looks[-1]
        judged = [(m, runs[m.id]) for m in latest.machines if runs[m.id].touched]
        if self.rule == "nomad":
            for machine, _ in judged:
                if machine.gave_up:
                    return self._task_failed(machine, looks, publish_started_ms)
        shortest: tuple[float, MachineSnapshot] | None = None
        for machine, run in judged:
            up = run.up_ms(publish_started_ms)
            up_ms = -1.0 if up is None else float(up)
            if shortest is None or up_ms < shortest[0]:
                shortest = (up_ms, machine)
        if shortest is not None and shortest[0] >= need_ms:
            return Verdict(
                True,
                f"every machine the publish restarted has stayed started for at least "
                f"{self.min_healthy_s:g} s since its newest start ({len(judged)} of "
                f"{len(latest.machines)} machine(s) judged)",
                layer="min-healthy-time",
            )
        if self.rule == "nomad":
            deadline_ms = publish_started_ms + in_ms(self.healthy_deadline_s)
        else:
            deadline_ms = last_progress_ms + in_ms(self.progress_deadline_s)
        if latest.at_ms >= deadline_ms:
            return self._deadline(shortest, looks, publish_started_ms, last_progress_ms)
        wait_ms = in_ms(self.poll_s)
        if shortest is not None and shortest[0] >= 0:
            # No need to look before the least-up machine could reach the minimum.
            wait_ms = min(wait_ms, need_ms - shortest[0])
        return wait_at_least(to_s(min(wait_ms, deadline_ms - latest.at_ms)))

    def _starts_seen(self, machine_id: str, looks: Sequence[Look], publish_started_ms: int) -> int:
        return len(
            {
                e.timestamp
                for look in looks
                for seen in look.machines
                if seen.id == machine_id
                for e in seen.events
                if e.type == "start" and e.timestamp >= publish_started_ms
            }
        )

    def _task_failed(
        self, machine: MachineSnapshot, looks: Sequence[Look], publish_started_ms: int
    ) -> Verdict:
        starts = self._starts_seen(machine.id, looks, publish_started_ms)
        return Verdict(
            False,
            f"machine {machine.id} failed for good: the platform gave up restarting it "
            f"({describe(machine, publish_started_ms)}; {starts} start(s) seen since the "
            "publish), so Nomad marks the allocation unhealthy without waiting for the "
            f"{self.healthy_deadline_s:g} s deadline; check its logs for the exit cause",
            machine.id,
            layer="task-failed",
        )

    def _deadline(
        self,
        shortest: tuple[float, MachineSnapshot] | None,
        looks: Sequence[Look],
        publish_started_ms: int,
        last_progress_ms: int,
    ) -> Verdict:
        if self.rule == "nomad":
            rule = f"within the {self.healthy_deadline_s:g} s healthy deadline"
            layer = "healthy-deadline"
        else:
            rule = (
                f"with no progress for {self.progress_deadline_s:g} s since "
                f"{since(last_progress_ms, publish_started_ms)} (ProgressDeadlineExceeded)"
            )
            layer = "progress-deadline"
        if shortest is None:
            return Verdict(
                False,
                f"no machine was restarted by the publish {rule}: nothing shows the new release running",
                layer=layer,
            )
        up_ms, machine = shortest
        if up_ms >= 0:
            newest = since(int(machine.at_ms - up_ms), publish_started_ms)
            state = f"its newest start at {newest} is only {to_s(up_ms):.1f} s old"
        else:
            state = describe(machine, publish_started_ms)
        starts = self._starts_seen(machine.id, looks, publish_started_ms)
        return Verdict(
            False,
            f"machine {machine.id} did not stay started for {self.min_healthy_s:g} s in a row "
            f"{rule} ({state}; {starts} start(s) seen since the publish): the app keeps "
            "restarting or never comes up; check its logs for the exit cause",
            machine.id,
            layer=layer,
        )
