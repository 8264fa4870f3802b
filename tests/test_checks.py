"""The count and timestamp checks as pure functions of looks, with no simulator."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from hypothesis import Phase, event, example, find, given, note, seed, settings
from hypothesis import strategies as st

from platform_testbed.checks import CountCheck, Event, LayeredCheck, Look, TimestampCheck, Verdict, Wait
from platform_testbed.sim.config.profiles import PROFILES
from platform_testbed.sim.kit.testing import PUBLISH_MS as FLEET_PUBLISH_MS
from platform_testbed.sim.kit.testing import App, Run, crash_loop, drive, drive_world, look_at, snapshot_at
from platform_testbed.sim.kit.testing import World as FleetWorld
from platform_testbed.sim.kit.testing import world as lay_out

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
        e._replace(exit_code=0, requested_stop=True) if e.type == "exit" else e for e in world.pre
    )
    cleaned = replace(world, pre=clean_pre)
    for check_cls in (CountCheck, TimestampCheck):
        assert world.run(check_cls)[0].ok == cleaned.run(check_cls)[0].ok


def _fast_crash_loops() -> st.SearchStrategy[World]:
    """Crash loops whose period is shorter than the look delay, running through the check."""
    return worlds(crashing=True).filter(
        lambda w: (w.post[2].timestamp - w.post[1].timestamp) + 3_000 < w.look_delay_s * 1000
        and w.post[-1].timestamp > PUBLISH_MS + 120_000
    )


def test_hypothesis_finds_the_smallest_cap_that_fools_timestamp():
    """A fast crash loop fools timestamp at cap 1, and the same loop at caps 2-10 is caught."""
    fooled = find(_fast_crash_loops(), lambda w: w.run(TimestampCheck)[0].ok)
    assert fooled.cap == 1
    # 1 is also the lowest cap the strategy draws: what makes it the smallest is that one
    # more event in the list already shows the crash behind the restart's start.
    for cap in range(2, 11):
        verdict, _ = replace(fooled, cap=cap).run(TimestampCheck)
        assert not verdict.ok, cap


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


# --- generated fleets: several machines on the simulator's own machine model -----------
#
# Each machine runs the new release its own way: stays up, crash-loops with a non-zero
# exit, is OOM-killed, or exits cleanly (0); under on-failure with few retries the
# platform gives up on it. ``sim.kit.testing.world`` lays out every machine's full, uncapped
# history, so a property can judge a verdict against what really happened.

LAYERS = ("look-twice", "gave-up", "crashes-since-publish")


@dataclass(frozen=True)
class Fleet:
    """Machines of one publish sharing an event-list cap and profile, and the check's delay."""

    apps: tuple[App, ...]
    look_delay_s: int

    @property
    def cap(self) -> int:
        return self.apps[0].cap

    @property
    def per_crash(self) -> int:
        """Events one crash cycle writes under this fleet's profile."""
        return PROFILES[self.apps[0].events].per_crash

    @property
    def kinds(self) -> set[str]:
        """How the machines behave, in words (for hypothesis' event statistics)."""
        return {
            "stays up" if app.crash_after_ms is None
            else "is OOM-killed" if app.oom
            else f"exits {app.exit_code}"
            for app in self.apps
        }

    def world(self) -> FleetWorld:
        # Long enough for any layered check here to decide: 60 s start timeout + 2 delays.
        return lay_out(*self.apps, horizon_s=150)

    def run(self, check_cls: type[LayeredCheck], w: FleetWorld | None = None) -> Run:
        check = check_cls(look_delay_s=self.look_delay_s, start_timeout_s=60, poll_s=1)
        return drive_world(check, w or self.world())


@st.composite
def machine_apps(draw: st.DrawFn, cap: int, profile: str) -> App:
    """One machine: stays up, or exits (code 1 or 2, OOM, or clean 0) after each start."""
    how = draw(st.sampled_from(["up", "crash", "crash", "oom", "clean"]))
    return App(
        boot_ms=draw(st.integers(100, 3_000)),
        crash_after_ms=None if how == "up" else draw(st.integers(200, 8_000)),
        restart_delay_ms=draw(st.integers(0, 2_000)),
        # None restarts forever; a few retries end in the platform giving up.
        max_retries=draw(st.sampled_from([None, 0, 1, 3, 10])),
        exit_code={"crash": draw(st.sampled_from([1, 2])), "clean": 0}.get(how, 1),
        oom=how == "oom",
        cap=cap,
        events=profile,
    )


@st.composite
def fleets(draw: st.DrawFn, cap: st.SearchStrategy[int] | None = None) -> Fleet:
    """One to three machines, one cap and event profile for all, a look delay of 1-20 s."""
    shared_cap = draw(cap if cap is not None else st.integers(1, 12))
    profile = draw(st.sampled_from(sorted(PROFILES)))
    count = draw(st.integers(1, 3))
    apps = tuple(draw(machine_apps(shared_cap, profile)) for _ in range(count))
    return Fleet(apps, draw(st.integers(1, 20)))


def _decided(run: Run) -> Verdict:
    assert run.verdict is not None, "no verdict within the horizon"
    return run.verdict


@given(fleets())
def test_timestamp_pass_vouches_for_the_last_look_delay_in_the_full_history(fleet: Fleet):
    """Cap >= a crash cycle: when timestamp passes, no machine crashed in the look delay before it.

    Judged against the uncapped history the simulator's machine model wrote, not against
    the looks the check saw: a pass at look 2 or 3 comes ``look_delay_s`` after the look
    before it, and every crash in between must have made it fail.
    """
    for kind in fleet.kinds:
        event(f"has a machine that {kind}")
    event(f"{len(fleet.apps)} machine(s)")
    w = fleet.world()
    run = fleet.run(TimestampCheck, w)
    verdict = _decided(run)
    event(f"timestamp layer {verdict.layer}, {'pass' if verdict.ok else 'fail'}")
    if fleet.cap < fleet.per_crash:
        event("cap below a crash cycle")
        return
    if not verdict.ok:
        return
    decided_at = run.looks[-1].at_ms
    since = decided_at - fleet.look_delay_s * 1000
    missed = [
        (m.id, e.timestamp - FLEET_PUBLISH_MS)
        for m in w.machines
        for e in m.events
        if e.is_crash and since < e.timestamp <= decided_at
    ]
    note(f"{w!r}: passed at +{decided_at - FLEET_PUBLISH_MS} ms over crashes {missed}")
    assert not missed


@given(fleets())
def test_a_fleet_with_a_machine_given_up_on_never_passes(fleet: Fleet):
    """If the full history shows the platform gave up on a machine by the verdict, neither check passes."""
    w = fleet.world()
    for check_cls in (CountCheck, TimestampCheck):
        run = fleet.run(check_cls, w)
        verdict = _decided(run)
        event(f"{check_cls.name} layer {verdict.layer}")
        decided_at = run.looks[-1].at_ms
        given_up = [
            m.id
            for m in w.machines
            if any(e.is_crash and not e.restarting and e.timestamp <= decided_at for e in m.events)
        ]
        if given_up:
            event("a machine given up on")
            assert not verdict.ok, (given_up, verdict)


@given(fleets(cap=st.just(10_000)))
def test_with_a_cap_that_holds_everything_count_and_timestamp_agree(fleet: Fleet):
    """When no event ever falls off, counting crashes and comparing timestamps agree."""
    w = fleet.world()
    count = _decided(fleet.run(CountCheck, w))
    timestamp = _decided(fleet.run(TimestampCheck, w))
    assert count.ok == timestamp.ok


LAYER_SEEDS = (0, 1, 2)


def test_generated_fleets_reach_all_three_layers_of_both_checks():
    """Over a fixed seed list the generated fleets decide at every layer, for both checks."""
    reached: Counter[tuple[str, str]] = Counter()
    for fixed in LAYER_SEEDS:

        @seed(fixed)
        @settings(max_examples=40, database=None, phases=[Phase.generate], deadline=None)
        @given(fleets())
        def collect(fleet: Fleet) -> None:
            w = fleet.world()
            for check_cls in (CountCheck, TimestampCheck):
                reached[check_cls.name, _decided(fleet.run(check_cls, w)).layer] += 1

        collect()
    for name in ("count", "timestamp"):
        for layer in LAYERS:
            assert reached[name, layer] > 0, (name, layer, reached)
