"""The capped event list, as the real machine writes it, against its uncapped trace."""

import itertools
import random

import pytest
import simpy
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from platform_testbed.sim.config.profiles import PROFILES
from platform_testbed.sim.config.scenario import AppTable, PlatformTable
from platform_testbed.sim.platform.eventlog import EventLog
from platform_testbed.sim.platform.machine import Image, Machine

#: Every change of state a machine may make (``starting -> starting``: ``always`` with a
#: profile that writes a restart event; ``stopped -> stopped``: autostop of a machine at rest).
LEGAL = {
    ("created", "starting"), ("starting", "started"), ("starting", "stopped"),
    ("starting", "starting"), ("started", "stopped"), ("started", "starting"),
    ("stopped", "starting"), ("stopped", "stopped"),
    *((state, "destroyed") for state in ("created", "starting", "started", "stopped")),
}


class MachineUnderUse(RuleBasedStateMachine):
    """The real Machine, started, stopped, crashed, woken and left to run, keeps a capped list.

    Production code never calls ``EventLog.append``: the machine writes its records
    itself, so the list is judged through the machine, against its uncapped trace.
    """

    @initialize(
        cap=st.integers(1, 8), seed=st.integers(0, 2**32),
        policy=st.sampled_from(["on-failure", "always", "no"]), retries=st.integers(0, 4),
        events=st.sampled_from(sorted(PROFILES)), boot_ms=st.integers(0, 3_000),
        delay_ms=st.integers(0, 2_000), jitter=st.sampled_from([0.0, 0.05, 0.3]),
    )
    def make(self, *, cap: int, seed: int, policy: str, retries: int, events: str, boot_ms: int,
             delay_ms: int, jitter: float) -> None:
        self.env = simpy.Environment()
        platform = PlatformTable(event_log_cap=cap, restart_policy=policy, max_retries=retries,  # type: ignore[arg-type]
                                 events=events, boot_s=boot_ms / 1000,
                                 restart_delay_s=delay_ms / 1000, jitter=jitter)
        self.machine = Machine(self.env, "m1", platform, random.Random(seed), trace=True)
        self.machine.launch(Image("app:v1", AppTable()))

    def _alive(self) -> bool:
        return self.machine.state != "destroyed"

    @precondition(_alive)
    @rule(crash_ms=st.integers(1, 5_000), code=st.sampled_from([0, 1, 137, 143]),
          oom=st.booleans())
    def deploy_a_crashing_image(self, crash_ms: int, code: int, oom: bool) -> None:
        app = AppTable(behavior="oom" if oom else "crash_after", crash_after_s=crash_ms / 1000,
                       exit_code=code)
        self.machine.update(Image("app:crashing", app))

    @precondition(_alive)
    @rule(start=st.booleans())
    def deploy_a_healthy_image(self, start: bool) -> None:
        self.machine.update(Image("app:healthy", AppTable()), start=start)

    @precondition(_alive)
    @rule()
    def stop(self) -> None:
        self.machine.sleep()

    @precondition(_alive)
    @rule()
    def wake(self) -> None:
        self.machine.wake()

    @precondition(_alive)
    @rule()
    def destroy(self) -> None:
        self.machine.destroy()

    @rule(ms=st.integers(1, 60_000))
    def advance(self, ms: int) -> None:
        self.env.run(until=self.env.now + ms / 1000)

    @invariant()
    def shows_the_newest_cap_events_newest_first(self) -> None:
        everything = self.machine.all_events
        assert everything is not None
        log = self.machine.log
        assert len(log) <= log.cap
        assert self.machine.snapshot().events == tuple(reversed(everything[-log.cap :]))
        assert tuple(e.timestamp for e in reversed(self.machine.snapshot().events)) == tuple(
            sorted(e.timestamp for e in self.machine.snapshot().events)
        )

    @invariant()
    def counts_what_fell_off(self) -> None:
        assert self.machine.all_events is not None
        assert self.machine.log.dropped == max(0, len(self.machine.all_events) - self.machine.log.cap)

    @invariant()
    def changes_state_only_along_legal_transitions(self) -> None:
        history = self.machine.history
        assert history is not None
        states = ["created", *(state for _, state in history)]
        illegal = [pair for pair in itertools.pairwise(states) if pair not in LEGAL]
        assert not illegal, illegal
        assert self.machine.state == states[-1]  # what it reads is the last change made


TestMachineUnderUse = MachineUnderUse.TestCase


def test_cap_below_one_is_refused():
    """A cap of 0 is not a platform: the constructor says so."""
    with pytest.raises(ValueError, match="event_log_cap"):
        EventLog(0)
