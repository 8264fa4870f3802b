"""The count and timestamp checks as pure functions of looks, with no simulator."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import example, find, given, note
from hypothesis import strategies as st

from checks import CountCheck, Event, LayeredCheck, Look, MachineSnapshot, TimestampCheck, Wait
from sim.testing import crash_loop, drive, look_at, snapshot_at

PUBLISH_MS = 1_000_000


def _incident_platform(cap: int = 5):
    """The write-up's fake platform: every look adds a crash and a start, trimmed to ``cap``."""
    events = [
        Event("launch", "created", PUBLISH_MS - 60_000),
        Event("start", "started", PUBLISH_MS - 59_000),
        Event("exit", "stopped", PUBLISH_MS - 30_000, exit_code=0, requested_stop=True),
        Event("update", "replaced", PUBLISH_MS),
    ]

    def observe(at_ms: int) -> Look:
        if at_ms > PUBLISH_MS:
            events.append(Event("exit", "stopped", at_ms - 20, exit_code=1, restarting=True))
            events.append(Event("start", "started", at_ms - 10))
        return look_at(events, at_ms, cap)

    return observe


def test_writeup_every_look_adds_a_crash_timestamp_fails():
    """The write-up's test: each look adds a crash and a start, cap 5, timestamp fails."""
    verdict, looks = drive(TimestampCheck(look_delay_s=5), PUBLISH_MS, _incident_platform())
    assert not verdict.ok
    assert "crashed repeatedly since the publish and is still restarting" in verdict.reason
    assert len(looks) == 4  # a poll while starting, then looks 1, 2 and 3


def test_writeup_every_look_adds_a_crash_count_passes():
    """The same platform fools the count check: the capped list holds two crashes at looks 2 and 3."""
    verdict, looks = drive(CountCheck(look_delay_s=5), PUBLISH_MS, _incident_platform())
    counts = [sum(1 for _ in m.crashes_since(PUBLISH_MS)) for look in looks for m in look.machines]
    assert counts[2] == counts[3] == 2
    assert verdict.ok


def test_first_step_is_an_immediate_look():
    """With no looks yet, a check asks to look now."""
    assert CountCheck().next(PUBLISH_MS, []) == Wait(0.0)


def test_never_started_fails_at_the_timeout_with_an_actionable_reason():
    """A machine that never reads started fails once start_timeout_s has passed."""
    events = [Event("update", "replaced", PUBLISH_MS)]
    check = TimestampCheck(start_timeout_s=10, poll_s=1)
    verdict, looks = drive(check, PUBLISH_MS, lambda at: look_at(events, at, 5))
    assert not verdict.ok
    assert "never read started within 10 s" in verdict.reason
    assert (looks[-1].at_ms - PUBLISH_MS) == 10_000


def test_gave_up_fails_at_any_look():
    """A machine whose newest exit says restarting=false, and is stopped, fails layer 2."""
    events = [
        Event("update", "replaced", PUBLISH_MS),
        Event("start", "started", PUBLISH_MS + 300),
        Event("exit", "stopped", PUBLISH_MS + 800, exit_code=1, restarting=False, restart_count=3),
    ]
    for check in (CountCheck(), TimestampCheck()):
        verdict = check.next(PUBLISH_MS, [look_at(events, PUBLISH_MS + 1000, 5)])
        assert not verdict.ok
        assert "gave up restarting machine m1 after 3 restart(s)" in verdict.reason


# --- generated worlds -------------------------------------------------------------------


@dataclass(frozen=True)
class World:
    """A generated machine history and the check's timing, for properties."""

    cap: int
    pre: tuple[Event, ...]
    post: tuple[Event, ...]
    look_delay_s: float

    def __repr__(self) -> str:
        crashes = sum(1 for e in self.post if e.is_crash)
        span = self.post[-1].timestamp - PUBLISH_MS
        return (
            f"World(cap={self.cap}, look_delay_s={self.look_delay_s}, "
            f"{len(self.pre)} events before the publish, {crashes} crashes in {span} ms after)"
        )

    def _repr_pretty_(self, printer, cycle) -> None:  # hypothesis prints dataclasses field by field
        printer.text(repr(self))

    @property
    def events(self) -> list[Event]:
        return [*self.pre, *self.post]

    def observe(self, at_ms: int) -> Look:
        return look_at(self.events, at_ms, self.cap)

    def run(self, check_cls: type[LayeredCheck]) -> tuple:
        check = check_cls(look_delay_s=self.look_delay_s, start_timeout_s=60, poll_s=1)
        return drive(check, PUBLISH_MS, self.observe)


@st.composite
def pre_publish(draw) -> tuple[Event, ...]:
    """Before the publish: the previous release started, maybe crashed a few times."""
    cycles = draw(st.integers(0, 6))
    crash_after = draw(st.integers(1, 4_000))
    restart = draw(st.integers(1, 2_000))
    start = PUBLISH_MS - 1 - cycles * (crash_after + restart) - 1_000
    events = crash_loop(start, crash_after, restart, cycles)
    events.append(Event("start", "started", events[-1].timestamp + restart if events else start))
    return tuple(events)


@st.composite
def worlds(draw, crashing: bool | None = None, cap: st.SearchStrategy[int] | None = None) -> World:
    """A publish: update, then a crash loop of some cycles, then (maybe) a start that stays up."""
    boot = draw(st.integers(1, 3_000))
    crash_after = draw(st.integers(1, 8_000))
    restart = draw(st.integers(1, 3_000))
    cycles_range = {None: (0, 40), True: (1, 200), False: (0, 0)}[crashing]
    cycles = draw(st.integers(*cycles_range))
    post = [Event("update", "replaced", PUBLISH_MS)]
    post += crash_loop(PUBLISH_MS + boot, crash_after, restart, cycles)
    last = post[-1].timestamp
    post.append(Event("start", "started", last + (restart if cycles else boot)))
    return World(
        cap=draw(cap if cap is not None else st.integers(1, 12)),
        pre=draw(pre_publish()),
        post=tuple(post),
        look_delay_s=draw(st.integers(1, 20)),
    )


def _newest_crash(snapshot: MachineSnapshot) -> int | None:
    return max((e.timestamp for e in snapshot.crashes_since(PUBLISH_MS)), default=None)


@given(worlds())
def test_timestamp_fails_whenever_look3_holds_a_crash_newer_than_look2(world: World):
    """If look 3's list holds a crash newer than look 2's newest, timestamp fails."""
    verdict, looks = world.run(TimestampCheck)
    first = next((i for i, look in enumerate(looks) if look.machines[0].state == "started"), None)
    if first is None or len(looks) < first + 3:
        return  # decided before a third look: the property speaks of look 3
    look2, look3 = looks[first + 1].machines[0], looks[first + 2].machines[0]
    newest2, newest3 = _newest_crash(look2), _newest_crash(look3)
    note(f"look2 newest={newest2} look3 newest={newest3} verdict={verdict}")
    if newest3 is not None and (newest2 is None or newest3 > newest2):
        assert not verdict.ok


@given(worlds(crashing=False))
def test_started_at_every_look_with_no_crash_since_publish_passes_both(world: World):
    """A machine that boots once and stays up is passed by both checks."""
    for check_cls in (CountCheck, TimestampCheck):
        verdict, looks = world.run(check_cls)
        assert all(m.state == "started" for m in looks[-1].machines)
        assert verdict.ok, verdict.reason


@given(worlds())
def test_crashes_before_the_publish_never_count(world: World):
    """Turning every pre-publish crash into a clean stop changes no verdict."""
    clean_pre = tuple(
        replace(e, exit_code=0, requested_stop=True) if e.type == "exit" else e for e in world.pre
    )
    cleaned = replace(world, pre=clean_pre)
    for check_cls in (CountCheck, TimestampCheck):
        assert world.run(check_cls)[0].ok == cleaned.run(check_cls)[0].ok


@given(worlds(cap=st.just(10_000)))
def test_with_a_cap_that_holds_everything_count_and_timestamp_agree(world: World):
    """When no event ever falls off, counting crashes and comparing timestamps agree."""
    count, _ = world.run(CountCheck)
    timestamp, _ = world.run(TimestampCheck)
    assert count.ok == timestamp.ok


def _fast_crash_loops() -> st.SearchStrategy[World]:
    """Crash loops whose period is shorter than the look delay, running through the check."""
    return worlds(crashing=True).filter(
        lambda w: (w.post[2].timestamp - w.post[1].timestamp) + 3_000 < w.look_delay_s * 1000
        and w.post[-1].timestamp > PUBLISH_MS + 120_000
    )


def test_hypothesis_finds_the_smallest_cap_that_fools_timestamp():
    """The smallest event-list cap at which a fast crash loop passes the timestamp check is 1."""
    fooled = find(_fast_crash_loops(), lambda w: w.run(TimestampCheck)[0].ok)
    assert fooled.cap == 1


# The smallest fooling world hypothesis found, pinned: cap 1 keeps only the restart's
# start event, so no crash is ever visible and the check passes at look 2.
SMALLEST_FOOLING_WORLD = World(
    cap=1,
    pre=(Event("start", "started", PUBLISH_MS - 1_000),),
    post=(
        Event("update", "replaced", PUBLISH_MS),
        *crash_loop(PUBLISH_MS + 1, 1_000, 1_000, 100),
        Event("start", "started", PUBLISH_MS + 1 + 2_000 * 100),
    ),
    look_delay_s=6,
)


@given(_fast_crash_loops())
@example(SMALLEST_FOOLING_WORLD)
def test_timestamp_is_fooled_by_a_fast_crash_loop_only_when_cap_is_1(world: World):
    """Any cap of 2 or more keeps the newest crash behind the restart's start: timestamp fails."""
    verdict, _ = world.run(TimestampCheck)
    if verdict.ok:
        assert world.cap == 1
    if world.cap >= 2:
        assert not verdict.ok


def test_snapshot_at_caps_and_orders_newest_first():
    """The hand-made snapshot keeps the newest ``cap`` events, newest first."""
    events = crash_loop(PUBLISH_MS, 100, 50, 4)
    snap = snapshot_at(events, PUBLISH_MS + 10_000, 3)
    assert [e.timestamp for e in snap.events] == sorted((e.timestamp for e in events[-3:]), reverse=True)
