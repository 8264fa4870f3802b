"""flyctl's rolling update as a schedule: which machines are updated when, a pool at a time.

``plan.go`` ``updateMachinesWRecovery`` and ``updateProcessGroup`` (superfly/flyctl at
``checks.flyctl.FLYCTL_COMMIT``): cold machines at once, warm ones through an errgroup
limit, the whole pass cancelled at the first failure, a wait timeout retried. This module
keeps only that bookkeeping, folded look by look; what each machine's steps read of it
(``updateMachineWChecks``: the settled wait, the listen wait, the smoke reads) and the
verdicts are the check's (``checks.flyctl``, rules 6-7 of ``FlyctlSmokeCheck``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .model import Look, MachineSnapshot, Verdict

#: ``plan.go`` ``STOPPED_MACHINES_POOL_SIZE`` l.27: cold machines updated at once.
COLD_POOL = 30
#: ``machines.go`` ``DefaultMaxUnavailable`` l.42: the share of warm machines in flight.
MAX_UNAVAILABLE = 0.33
#: ``plan.go`` ``updateMachinesWRecovery`` l.342: the sleep after a failed retry pass.
RETRY_SLEEP_MS = 1_000
#: flyctl's "skipping machine update due to earlier failure" (``plan.go`` l.387).
SKIPPING = "skipping machine update due to earlier failure"


@dataclass(frozen=True, slots=True)
class Outcome:
    """How flyctl's per-machine steps ended for one machine, at which look and why."""

    passed: bool
    layer: str
    machine: MachineSnapshot


def _placeholder(machine_id: str, at_ms: int) -> MachineSnapshot:
    """A skipped machine's outcome names only its id: no snapshot of it is judged."""
    return MachineSnapshot(machine_id, "stopped", "", (), at_ms)


def pool_size(warm: int, max_unavailable: float) -> int:
    """``machines_deploymachinesapp.go`` ``getPoolSize`` l.918-925: how many warm machines at once.

    ``max_unavailable`` >= 1 is a count; below 1, a share of the warm machines, rounded up.
    """
    if max_unavailable >= 1:
        return int(max_unavailable)
    return max(1, math.ceil(warm * max_unavailable)) if warm else 0


class Rollout:
    """flyctl's rolling update in progress (``plan.go`` ``updateMachinesWRecovery``), look by look.

    The first look is the fleet before any update: flyctl's ``md.appState`` ``List``
    (``updateExistingMachinesWRecovery`` l.664), so a machine's state there is its
    ``originalMachine`` state; ``skipped`` holds those states that say skip
    (``shouldSkipLaunch``, read by the check). Every other field is per machine id; the
    per-machine progress (``wait_from``, ``opened``, ``due``, ``reads``, ``listened``) is
    the check's steps' to read and write, reset here when a pass starts a machine afresh.
    """

    __slots__ = ("attempts", "done", "due", "error", "listened", "opened", "order", "pending",
                 "pool", "queue", "reads", "retries", "retry_at", "retrying", "running", "skipped",
                 "updated", "wait_from", "warm")

    def __init__(self, first: Look, skipped: dict[str, str], max_unavailable: float,
                 retries: int) -> None:
        self.order = [m.id for m in first.machines]
        self.skipped = skipped
        #: ``isWarm`` (plan.go l.233-244): every launched machine is warm, because
        #: ``updateExistingMachinesWRecovery`` l.672-674 marks its new state ``started``.
        self.warm = [i for i in self.order if i not in self.skipped]
        self.pool = pool_size(len(self.warm), max_unavailable)
        self.retries = retries  # flyctl's --deploy-retries
        self.updated: dict[str, int] = {}  # when the machine was updated
        self.wait_from: dict[str, int] = {}  # when its current waitForMachineState began
        self.opened: dict[str, float] = {}
        self.due: dict[str, float] = {}
        self.reads: dict[str, int] = {}
        self.done: dict[str, Outcome] = {}
        self.running: list[str] = []  # in flight in the current pass, in start order
        self.queue: list[str] = []  # warm machines the current pass has yet to start
        self.pending: list[str] = []  # to update now: the driver updates, then looks
        self.listened = False  # md.listenAddressChecked: once per deploy, retries included
        self.attempts = 0  # plan.go's ``attempts`` of retry passes that failed
        self.retry_at: int | None = None
        self.retrying = False  # the first pass failed: retry passes run
        #: The first pass's error (plan.go returns ``updateErr`` once retries run out).
        self.error: Verdict | None = None

    def start_pass(self, at: int) -> None:
        """One call of ``updateMachinesWRecovery``'s update: cold machines at once, warm a pool at a time.

        ``plan.go`` l.246-267: cold (skipped) machines in a pool of min(n, 30), warm ones
        in a pool of ``pool_size``, both at once. A cold machine is updated without a start
        and settles at once (``updateMachineWChecks`` returns after its wait), so all of
        them are updated in this instant whatever the pool. Warm machines start in the
        look's order (plan.go ranges over a Go map, whose order is random: assumed the
        machines' id order, as its retry sorts them, l.306-310).
        """
        for mid in self.order:
            if mid in self.skipped and mid not in self.done:
                self.updated[mid] = at
                self.pending.append(mid)
                self.done[mid] = Outcome(True, "skipped", _placeholder(mid, at))
        self.running = []
        self.queue = [mid for mid in self.warm if mid not in self.done]
        self.fill(at)

    def fill(self, at: int) -> bool:
        """Fill the pool from the queue (errgroup ``SetLimit``: the next starts when one ends).

        A machine not yet updated is asked for (``Update``) and judged from the next look;
        one a failed pass already updated is not updated again (``updateMachineConfig``
        returns early when the config is the same, plan.go l.830-832) and waits afresh
        from now. True when such a machine started: it is judged in this look.
        """
        judged_now = False
        while len(self.running) < self.pool and self.queue:
            mid = self.queue.pop(0)
            self.running.append(mid)
            self.wait_from[mid] = at
            for progress in (self.opened, self.due, self.reads):
                progress.pop(mid, None)
            if mid in self.updated:
                judged_now = True
            else:
                self.updated[mid] = at
                self.pending.append(mid)
        return judged_now

    def cancel(self, at: int) -> bool:
        """A wait timeout (``error`` set): cancel the pass; retry it (True: no retry, the deploy fails).

        ``plan.go`` ``updateProcessGroup`` l.386-390: the first error cancels the group's
        context, so queued machines are skipped and in-flight ones stop, keeping whatever
        they run. A wait timeout is recoverable (``updateMachineWChecks`` l.613-617 returns
        the plain error), so ``updateMachinesWRecovery`` l.283-344 retries: the first retry
        at once, each later one after a 1 s sleep, while ``attempts <= deployRetries``
        (so ``retries`` R allows R + 1 retries); it then returns the first error.
        R = 0: flyctl takes the legacy path, which does not retry (its other differences
        are not modelled).
        """
        for mid in self.running:
            for progress in (self.opened, self.due, self.reads):
                progress.pop(mid, None)
        self.running, self.queue = [], []
        if self.retries == 0:
            return True
        if not self.retrying:  # the first pass failed: the first retry runs at once
            self.retrying = True
            self.start_pass(at)
            return False
        self.attempts += 1
        self.retry_at = at + RETRY_SLEEP_MS
        return False

    def retry_due(self, at: int) -> Verdict | None:
        """At the retry's time, the next pass starts, or the first error once retries ran out."""
        if self.retry_at is None or at < self.retry_at:
            return None
        self.retry_at = None
        if self.attempts > self.retries:
            return self._gave_up_retrying()
        self.start_pass(at)
        return None

    def _gave_up_retrying(self) -> Verdict:
        """``plan.go`` l.298-302: attempts > deployRetries, so the first error is returned."""
        assert self.error is not None
        return replace(
            self.error,
            reason=f"{self.error.reason}; flyctl retried the update {self.attempts} times "
            f"(deploy_retries = {self.retries}) and returns this first error"
            + self.skip_note(),
        )

    def skip_note(self) -> str:
        """The machines the cancelled deploy never updated, which keep the previous release."""
        never = [mid for mid in self.order if mid not in self.updated]
        if not never:
            return ""
        return f"; {SKIPPING}, so these keep the previous release: {', '.join(never)}"
