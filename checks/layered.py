"""The publish health check of the incident: three layers, and its two layer-3 variants."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .failsafe import lost_machines
from .memo import PerCheck
from .model import Look, MachineSnapshot, Verdict, Wait
from .options import INTERVAL, SECONDS, refuse_out_of_range
from .protocol import Step
from .reasons import describe, since
from .started import await_started


@dataclass(frozen=True)
class LayeredCheck:
    """Look twice after "started"; fail if the platform gave up; look a third time after a crash.

    Layer 1: wait (polling every ``poll_s``) until every machine reads ``started``, then
    look again ``look_delay_s`` later; a machine that is no longer started fails.
    Layer 2: at every look, a machine the platform gave up restarting fails.
    Layer 3: if look 2 shows a crash since the publish began, look once more
    ``look_delay_s`` later and fail if the machine crashed again in between, which
    subclasses decide from the visible event lists.
    """

    look_delay_s: float = field(default=5.0, metadata=SECONDS)
    start_timeout_s: float = field(default=60.0, metadata=SECONDS)
    poll_s: float = field(default=1.0, metadata=INTERVAL)
    name = "layered"
    #: The machine ids the looks so far showed, kept between a drive's calls
    #: (``checks.memo``): not a field, never compared.
    _seen = PerCheck[dict[str, int]]()

    def __post_init__(self) -> None:
        refuse_out_of_range(self)

    def crashed_again(
        self, look2: MachineSnapshot, look3: MachineSnapshot, publish_started_ms: int
    ) -> str | None:
        """Layer 3's comparison: a failure reason if the machine crashed between looks 2 and 3."""
        raise NotImplementedError

    def held_steady(self, look2: Look, look3: Look, publish_started_ms: int) -> str:
        """Layer 3's reason for passing."""
        raise NotImplementedError

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Return the next wait, or the verdict once the layers have decided."""
        step = self._layers(publish_started_ms, looks)
        if isinstance(step, Verdict):
            # The ids seen were kept for a call that will not come: dropped, they do not
            # hold this drive's looks for as long as the check object lives (a sweep's
            # built checks live for the whole sweep; kept, every world's last looks
            # outlived it and made the collector's full passes come often).
            self._seen.drop()
        return step

    def _layers(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        if lost := lost_machines(self.name, looks, self._seen):
            return lost
        if looks:
            for machine in looks[-1].machines:
                if machine.gave_up:
                    return self._gave_up(machine, publish_started_ms)
        first_started = await_started(self, publish_started_ms, looks)
        if not isinstance(first_started, int):
            return first_started

        after = looks[first_started + 1 :]
        if not after:
            return Wait(self.look_delay_s)
        look2 = after[0]
        if stopped := self._not_started(looks[first_started], look2, 2, publish_started_ms):
            return stopped
        if len(after) == 1:
            if any(any(m.crashes_since(publish_started_ms)) for m in look2.machines):
                return Wait(self.look_delay_s)
            return Verdict(
                True,
                f"all {len(look2.machines)} machine(s) read started twice "
                f"{self.look_delay_s:g} s apart with no crash since the publish began",
                layer="look-twice",
            )
        look3 = after[1]
        if stopped := self._not_started(look2, look3, 3, publish_started_ms):
            return stopped
        for machine3 in look3.machines:
            machine2 = look2.machine(machine3.id)
            if machine2 is None:
                continue
            if reason := self.crashed_again(machine2, machine3, publish_started_ms):
                return Verdict(False, reason, machine3.id, layer="crashes-since-publish")
        steady = self.held_steady(look2, look3, publish_started_ms)
        return Verdict(True, steady, layer="crashes-since-publish")

    def _gave_up(self, machine: MachineSnapshot, publish_started_ms: int) -> Verdict:
        exit_event = machine.newest_exit()
        restarts = exit_event.restart_count if exit_event else 0
        return Verdict(
            False,
            f"the platform gave up restarting machine {machine.id} after {restarts} restart(s) "
            f"({describe(machine, publish_started_ms)}): the app crashes on every start; "
            "check its logs for the exit cause",
            machine.id,
            layer="gave-up",
        )

    def _not_started(self, before: Look, look: Look, number: int, publish_started_ms: int) -> Verdict | None:
        for machine in look.machines:
            if machine.state != "started":
                return Verdict(
                    False,
                    f"machine {machine.id} read started at {since(before.at_ms, publish_started_ms)} "
                    f"but not at look {number} ({describe(machine, publish_started_ms)}): "
                    "it does not stay up after boot",
                    machine.id,
                    layer="look-twice",
                )
        return None


@dataclass(frozen=True)
class CountCheck(LayeredCheck):
    """Layer 3 compares the number of crashes since the publish (the check of 25 September).

    Blind to crash loops once the capped event list is full: the window slides but holds
    the same mix, so the count stays flat between looks.
    """

    name = "count"

    def crashed_again(
        self, look2: MachineSnapshot, look3: MachineSnapshot, publish_started_ms: int
    ) -> str | None:
        """Fail when look 3 shows more crashes since the publish than look 2."""
        before = sum(1 for _ in look2.crashes_since(publish_started_ms))
        after = sum(1 for _ in look3.crashes_since(publish_started_ms))
        if after > before:
            return (
                f"machine {look3.id} has more crashes since the publish at look 3 than at "
                f"look 2 ({before} -> {after}): the app is not staying up"
            )
        return None

    def held_steady(self, look2: Look, look3: Look, publish_started_ms: int) -> str:
        """Report the counts that did not rise."""
        counts = ", ".join(
            f"{m.id} {sum(1 for _ in m.crashes_since(publish_started_ms))}" for m in look3.machines
        )
        return f"crashes since the publish did not increase between looks 2 and 3 ({counts})"


@dataclass(frozen=True)
class TimestampCheck(LayeredCheck):
    """Layer 3 compares the newest crash timestamp since the publish (the fix).

    A sliding window can hide how many crashes happened, never that a new one just
    happened: the newest events are the ones the platform keeps.
    """

    name = "timestamp"

    def crashed_again(
        self, look2: MachineSnapshot, look3: MachineSnapshot, publish_started_ms: int
    ) -> str | None:
        """Fail when look 3's newest crash since the publish is later than look 2's."""
        newest2 = max((e.timestamp for e in look2.crashes_since(publish_started_ms)), default=None)
        newest3 = max((e.timestamp for e in look3.crashes_since(publish_started_ms)), default=None)
        if newest3 is not None and (newest2 is None or newest3 > newest2):
            seen = "none" if newest2 is None else since(newest2, publish_started_ms)
            return (
                f"machine {look3.id} has crashed repeatedly since the publish and is still "
                f"restarting (newest crash at {since(newest3, publish_started_ms)}, "
                f"look 2 had seen {seen})"
            )
        return None

    def held_steady(self, look2: Look, look3: Look, publish_started_ms: int) -> str:
        """Report that no newer crash appeared."""
        return "no crash newer than look 2's newest appeared by look 3: the machines stay up"
