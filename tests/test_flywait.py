"""One wait rule (checks.flywait): the twin's /wait long poll answers what flyctl-smoke reads."""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from platform_testbed.checks import Event, MachineSnapshot, flywait
from platform_testbed.checks.flywait import reached_at
from platform_testbed.sim.config.profiles import PROFILES
from platform_testbed.sim.config.scenario import Scenario, load
from platform_testbed.sim.twin.app import ApiError, ServedApp, WaitStarted

#: flyctl plan.go ``updateMachineWChecks`` l.613: the three states waited for at once.
FLYCTL_STATES = ("stopped", "started", "suspended")
T0 = 1_700_000_000_000


def _publish(app: ServedApp) -> int:
    """Run the twin's world up to its own publish (all machines updated in one step)."""
    while app.publish_started_ms is None:
        app.env.step()
    return app.publish_started_ms


def _twin_answers(
    app: ServedApp, horizon_ms: int
) -> dict[tuple[str, str], tuple[int, str]]:
    """Per (machine, state): when and in which state that state's long poll first answered 200.

    Each state is its own wait (as ``waitForMachineState`` runs them), timeout 60 s, asked
    again at once after a 408, and no ``instance_id`` (flyctl sends none).
    """
    answers: dict[tuple[str, str], tuple[int, str]] = {}
    held: list[tuple[tuple[str, str], WaitStarted]] = []

    def ask(key: tuple[str, str]) -> None:
        result = app.wait(app.app, key[0], [key[1]], 60, None)
        if isinstance(result, WaitStarted):
            held.append((key, result))
        else:
            answered(key, result)

    def answered(key: tuple[str, str], result: tuple[int, object]) -> None:
        status, body = result
        if status == 408:
            ask(key)  # flyctl's WaitForState asks again (its backoff gap: see flywait)
            return
        assert status == 200, result
        assert isinstance(body, dict)
        answers[key] = (app.now_ms(), body["state"])

    for machine in app.world.machines:
        for state in FLYCTL_STATES:
            ask((machine.id, state))
    while held and app.env.peek() < float("inf") and app.now_ms() < horizon_ms:
        app.env.step()
        done = [(key, pending) for key, pending in held if pending.future.done()]
        held = [(key, pending) for key, pending in held if not pending.future.done()]
        for key, pending in done:
            answered(key, pending.future.result())
    return answers


def _tick(at_ms: int, publish_ms: int) -> int:
    """plan.go ``waitForMachineState`` l.791-807: the first 1 s tick at or after ``at_ms``."""
    return publish_ms + math.ceil((at_ms - publish_ms) / 1000) * 1000


def _earliest(
    looks: Sequence[MachineSnapshot], states: Sequence[str], since_ms: int
) -> tuple[int, str] | None:
    """The earliest entry reached_at finds in any of a machine's looks."""
    found = [r for look in looks if (r := reached_at(look, states, since_ms)) is not None]
    return min(found, default=None)


def _agree(scenario: Scenario, seed: int) -> int:
    """Run one world against the twin's waits and flyctl-smoke's reading; the answers compared."""
    app = ServedApp(scenario, seed, testbed_publishes=True)
    publish_ms = _publish(app)
    horizon_ms = publish_ms + 120_000
    looks: list[MachineSnapshot] = []

    def look_every_second() -> Generator[simpy.Event, None, None]:
        # flyctl-smoke's looks: one at the publish, then at each of plan.go's 1 s ticks.
        while True:
            looks.extend(m.snapshot() for m in app.world.machines)
            yield app.env.timeout(1.0)

    app.env.process(look_every_second())
    app.env.step()  # the look at the publish instant, before any wait is asked
    answers = _twin_answers(app, horizon_ms)
    compared = 0
    for machine in app.world.machines:
        # Lists that keep every event (cap 10,000): the earliest entry any look shows.
        mine = [look for look in looks if look.id == machine.id]
        for state in FLYCTL_STATES:
            twin = answers.get((machine.id, state))
            check = _earliest(mine, (state,), publish_ms)
            if check is not None and check[0] >= horizon_ms:
                check = None  # after the twin stopped waiting
            assert twin == check, (machine.id, state, twin, check)
            compared += twin is not None
        # What plan.go goes on with: the first of the three, seen at the next 1 s tick.
        first = min((a for (m, _), a in answers.items() if m == machine.id), default=None)
        settled = _earliest(mine, FLYCTL_STATES, publish_ms)
        if first is not None:
            assert settled is not None
            assert (_tick(first[0], publish_ms), first[1]) == (_tick(settled[0], publish_ms),
                                                                settled[1])
    return compared


def _scenario(name: str, *sets: str) -> Scenario:
    return load(name, ["platform.event_log_cap=10000", *sets])


@pytest.mark.parametrize(("name", "sets"), [
    ("sept25-crash-loop", ()),
    ("sept25-crash-loop", ("platform.restart_policy=always",)),
    ("sept25-crash-loop", ("platform.events=fly-restart-double-start", "platform.boot_s=0.3")),
    ("healthy-release", ()),
    ("gives-up", ()),
    ("sleeping-api-flyctl", ()),
])
def test_the_twins_long_poll_answers_when_and_what_flyctl_smoke_reads(
    name: str, sets: Sequence[str]
) -> None:
    """One world: the twin's /wait answers (moment, state) equal reached_at + the 1 s tick."""
    assert _agree(_scenario(name, *sets), 1) >= 1


@settings(max_examples=25, deadline=None)
@given(
    profile=st.sampled_from(sorted(PROFILES)),
    policy=st.sampled_from(["always", "on-failure", "no"]),
    behavior=st.sampled_from(["crash_after", "crash_on_boot", "healthy", "slow_boot"]),
    boot_s=st.floats(0.0, 4.0),
    delay_s=st.floats(0.0, 3.0),
    machines=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_the_twin_and_flyctl_smoke_agree_in_generated_worlds(  # noqa: PLR0917 (hypothesis)
    profile: str, policy: str, behavior: str, boot_s: float, delay_s: float, machines: int,
    seed: int,
) -> None:
    """Any profile, policy, behaviour and timing: the twin's answer is flyctl-smoke's reading."""
    _agree(_scenario(
        "sept25-crash-loop", f"platform.events={profile}", f"platform.restart_policy={policy}",
        f"release.behavior={behavior}", f"platform.boot_s={boot_s}",
        f"platform.restart_delay_s={delay_s}", f"release.machines={machines}",
        "release.slow_boot_s=20",
    ), seed)


def test_the_timeout_is_clamped_as_fly_go_clamps_it() -> None:
    """fly-go WithWaitTimeout: 1-60 s; absent: the docs' default 60."""
    assert [flywait.clamp_timeout_s(t) for t in (None, -5, 0, 1, 30, 60, 600)] == [
        60, 1, 1, 1, 30, 60, 60]


def test_settled_and_no_state_expand_as_the_api_reads_them() -> None:
    """``settled`` is every state at rest; no state is ``started`` (fly-go's default)."""
    assert flywait.wanted_states([]) == ("started",)
    assert flywait.wanted_states(["settled"]) == flywait.SETTLED
    assert "starting" not in flywait.SETTLED


def test_a_stopped_wait_without_instance_id_is_taken_unless_strict() -> None:
    """flyctl sends no instance_id: taken by default; the docs' strict reading refuses it."""
    assert flywait.refusal(["stopped"], None) is None
    assert flywait.refusal(["stopped"], None, strict=True) is not None
    assert flywait.refusal(["stopped"], "v1", strict=True) is None
    assert "invalid state" in (flywait.refusal(["asleep"], None) or "")


def test_a_requested_stop_exit_does_not_answer_but_a_stopped_state_does() -> None:
    """The update's own stop is no entry; a machine that reads stopped is one, at its time."""
    stop = Event("exit", "stopped", T0, requested_stop=True)
    starting = MachineSnapshot("m1", "starting", "app", (stop,), T0 + 5)
    assert reached_at(starting, ("stopped",), T0) is None
    asleep = MachineSnapshot("m1", "stopped", "app", (stop,), T0 + 5)
    assert reached_at(asleep, ("stopped",), T0) == (T0 + 5, "stopped")


def test_an_unknown_state_is_refused_by_the_twin_with_400() -> None:
    """The twin refuses what flywait refuses, with its text."""
    app = ServedApp(_scenario("healthy-release"), 1, testbed_publishes=True)
    _publish(app)
    with pytest.raises(ApiError) as refused:
        app.wait(app.app, "m1", ["asleep"], 60, None)
    assert refused.value.status == 400
    assert "invalid state" in refused.value.message
