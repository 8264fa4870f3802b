"""The simulated platform: lifecycle, restart policies, rollback, reconciler, traffic."""

from __future__ import annotations

import random

import simpy
from hypothesis import example, given
from hypothesis import strategies as st

from platform_testbed.checks import TimestampCheck
from platform_testbed.sim.config import scenario
from platform_testbed.sim.config.scenario import AppTable, PlatformTable
from platform_testbed.sim.platform import behavior
from platform_testbed.sim.platform.machine import Image, Machine
from platform_testbed.sim.platform.restarting import RestartBudget
from platform_testbed.sim.publish import world


def _machine(app: AppTable, **rules: object) -> tuple[simpy.Environment, Machine]:
    env = simpy.Environment()
    platform = PlatformTable(jitter=0.0, **rules)  # type: ignore[arg-type]
    machine = Machine(env, "m1", platform, random.Random(0), trace=True)
    machine.launch(Image("app:v1", app))
    return env, machine


def _exits(machine: Machine) -> list:
    assert machine.all_events is not None
    return [e for e in machine.all_events if e.type == "exit"]


def test_on_failure_gives_up_after_max_retries_and_says_so():
    """on-failure with max_retries=3: four crashes, then stopped with restarting=false."""
    env, machine = _machine(AppTable(behavior="crash_after", crash_after_s=1.0), max_retries=3)
    env.run(until=60)
    exits = _exits(machine)
    assert len(exits) == 4
    assert [e.restarting for e in exits] == [True, True, True, False]
    assert [e.restart_count for e in exits] == [0, 1, 2, 3]
    assert machine.state == "stopped"
    assert machine.snapshot().gave_up


def test_on_failure_counts_retries_only_within_its_window():
    """Crashes further apart than the 5-minute window never exhaust max_retries."""
    app = AppTable(behavior="crash_after", crash_after_s=200.0)
    env, machine = _machine(app, max_retries=2, retry_window_s=300.0)
    env.run(until=3000)
    # Each cycle takes ~202 s: at most one earlier restart is inside any 300 s window.
    assert len(machine.crashes) == 3000 // 202
    assert all(e.restarting for e in _exits(machine))
    env, machine = _machine(app, max_retries=2, retry_window_s=0.0)
    env.run(until=3000)
    assert len(machine.crashes) == 3  # whole-life counting: gives up after 2 retries


def test_on_failure_does_not_restart_a_clean_exit():
    """Exit code 0 under on-failure: the machine stops, no retry, and it is not a crash."""
    env, machine = _machine(AppTable(behavior="crash_after", crash_after_s=1.0, exit_code=0))
    env.run(until=60)
    exits = _exits(machine)
    assert len(exits) == 1
    assert not exits[0].restarting
    assert not exits[0].is_crash
    assert machine.crashes == []
    assert machine.state == "stopped"


def test_always_keeps_restarting_and_never_reads_stopped():
    """restart policy `always` never gives up and never enters stopped, even on exit 0."""
    app = AppTable(behavior="crash_after", crash_after_s=1.0, exit_code=0)
    env, machine = _machine(app, restart_policy="always", boot_s=0.5, restart_delay_s=0.5)
    env.run(until=100)
    assert len(_exits(machine)) == 50
    assert machine.history is not None
    assert "stopped" not in {state for _, state in machine.history}
    assert not machine.snapshot().gave_up


def test_no_restart_policy_stops_after_the_first_crash():
    """restart policy `no`: one crash and the machine stays stopped."""
    env, machine = _machine(AppTable(behavior="crash_after", crash_after_s=1.0), restart_policy="no")
    env.run(until=60)
    assert len(machine.crashes) == 1
    assert machine.state == "stopped"


def test_event_list_is_capped_and_counts_dropped_events():
    """The machine's list holds event_log_cap events; the rest are counted as dropped."""
    env, machine = _machine(AppTable(behavior="crash_after", crash_after_s=1.0), event_log_cap=5,
                            restart_policy="always")
    env.run(until=30)
    assert machine.all_events is not None
    assert len(machine.log) == 5
    assert machine.log.dropped == len(machine.all_events) - 5


def test_crash_after_starts_is_healthy_for_the_first_k_starts():
    """crash_after_starts=2: the first two starts stay up (until interrupted), the third crashes."""
    app = AppTable(behavior="crash_after_starts", crash_after_starts=2, crash_after_s=1.0)
    rng = random.Random(0)
    assert behavior.next_exit(app, 1, rng, 0.0) is None
    assert behavior.next_exit(app, 2, rng, 0.0) is None
    assert behavior.next_exit(app, 3, rng, 0.0) == (1.0, 1, False)


def test_oom_exits_with_137_and_oom_killed():
    """The oom behaviour exits with code 137 and oom_killed set."""
    env, machine = _machine(AppTable(behavior="oom", crash_after_s=2.0), restart_policy="no")
    env.run(until=10)
    exit_event = machine.snapshot().newest_exit()
    assert exit_event is not None
    assert (exit_event.exit_code, exit_event.oom_killed, exit_event.is_crash) == (137, True, True)


def test_slow_boot_with_a_short_start_timeout_is_a_false_alarm():
    """A slow but healthy release fails a check whose start timeout is shorter than its boot."""
    loaded = scenario.load("healthy-release", ["release.behavior=slow_boot",
                                               "release.slow_boot_s=40", "check.start_timeout_s=20"])
    result = world.run(loaded, 1, TimestampCheck(**loaded.check.model_dump()))
    assert result.outcome == "false_alarm"
    assert result.verdict is not None
    assert result.verdict.layer == "start-timeout"


def test_asleep_previous_machines_are_stopped_when_the_publish_begins():
    """With [previous] asleep = true the machines are stopped (a requested stop) at the publish."""
    loaded = scenario.load("sleeping-api-crash-on-boot")
    built = world.build(loaded, 1)
    built.env.process(world._previous_release(built))
    built.env.run(until=loaded.publish.at_s - 0.001)
    machine = built.machines[0]
    assert machine.state == "stopped"
    newest = next(e for e in machine.snapshot().events if e.type == "exit")
    assert newest.requested_stop
    assert not newest.is_crash


def test_restore_rollback_puts_the_previous_image_back():
    """After a caught publish with restore, the machines run the previous image and stay up."""
    loaded = scenario.load("sept25-crash-loop")
    result = world.run(loaded, 1, TimestampCheck(**loaded.check.model_dump()), trace=True)
    assert result.rollback == "restored"
    assert result.trace is not None
    machine = result.trace.machines[0]
    last_update = [e for e in machine.events if e.type == "update"][-1]
    assert (last_update.timestamp - loaded.platform.epoch_ms) / 1000 > loaded.publish.at_s
    assert machine.states[-1][1] == "started"
    assert result.site.not_found == 0


def test_world_is_deterministic_for_a_seed():
    """The same scenario and seed give the same looks, verdict and requests."""
    loaded = scenario.load("sept25-crash-loop")
    one = world.run(loaded, 5, TimestampCheck(**loaded.check.model_dump()))
    two = world.run(loaded, 5, TimestampCheck(**loaded.check.model_dump()))
    assert one == two


def test_traffic_counts_add_up_and_follow_the_rate():
    """Every request ends as served, 404 or 502, and their number is near rps × duration."""
    loaded = scenario.load("healthy-release", ["traffic.rps=20"])
    result = world.run(loaded, 3, TimestampCheck(**loaded.check.model_dump()))
    site = result.site
    assert site.requests == site.served + site.not_found + site.bad_gateway
    expected = 20 * (loaded.horizon_s - loaded.publish.at_s)
    assert abs(site.requests - expected) < 5 * expected**0.5


def test_next_change_succeeds_at_each_change_with_the_new_state():
    """next_change() fires at the boot's end, the crash and the restart, each with its state."""
    app = AppTable(behavior="crash_after", crash_after_s=2.0)
    env, machine = _machine(app, boot_s=0.5, restart_delay_s=0.25)
    seen: list[tuple[float, str]] = []

    def waiter():
        for _ in range(4):
            state = yield machine.next_change()
            seen.append((env.now, state))

    env.process(waiter())
    env.run(until=10)
    assert seen == [(0.5, "started"), (2.5, "stopped"), (2.75, "starting"), (3.25, "started")]


def test_a_restart_is_told_at_its_instant_without_any_read():
    """on-failure's stopped -> starting happens at crash + delay, told to on_state; reads change nothing."""
    env = simpy.Environment()
    told: list[tuple[float, str]] = []
    platform = PlatformTable(jitter=0.0, boot_s=0.5, restart_delay_s=0.25, max_retries=1)
    machine = Machine(env, "m1", platform, random.Random(0),
                      on_state=lambda m: told.append((env.now, m.state)))
    machine.launch(Image("app:v1", AppTable(behavior="crash_after", crash_after_s=2.0)))
    env.run(until=2.6)
    assert machine.state == "stopped"  # inside the restart delay
    env.run(until=10)
    assert told == [(0.0, "starting"), (0.5, "started"), (2.5, "stopped"), (2.75, "starting"),
                    (3.25, "started"), (5.25, "stopped")]


# --- restart rules as the sources state them (issue 19.3) -----------------------------

WINDOW_S = 300.0


def _windows(times: list[float]) -> list[list[float]]:
    """Restart times grouped into fixed windows: each opens at its first restart, lasts 5 min."""
    groups: list[list[float]] = []
    for t in times:
        if groups and t - groups[-1][0] < WINDOW_S:
            groups[-1].append(t)
        else:
            groups.append([t])
    return groups


def _restart_rule_machine(
    seed: int, retries: int, boot_ms: int, delay_ms: int, **rules: object
) -> tuple[simpy.Environment, Machine]:
    env = simpy.Environment()
    platform = PlatformTable(max_retries=retries, boot_s=boot_ms / 1000,
                             restart_delay_s=delay_ms / 1000, jitter=0.05, epoch_ms=0,
                             **rules)  # type: ignore[arg-type]
    return env, Machine(env, "m1", platform, random.Random(seed), trace=True)


def _flaky_or_looping(crash_ms: int, flaky: bool) -> AppTable:
    if flaky:  # irregular gaps between crashes: where a fixed and a sliding window differ
        return AppTable(behavior="flaky", crash_probability=0.3, flaky_interval_s=crash_ms / 1000)
    return AppTable(behavior="crash_after", crash_after_s=crash_ms / 1000)


restart_worlds = st.tuples(
    st.integers(0, 2**32), st.integers(0, 6), st.integers(1, 3_000), st.integers(0, 2_000),
    st.integers(1, 150_000), st.booleans(),
)


@given(restart_worlds)
@example((0, 2, 400, 300, 100_000, False))  # ~100 s apart: the third exit is in the first window
@example((0, 2, 400, 300, 160_000, False))  # ~160 s apart: each third restart opens a window
@example((2, 2, 400, 300, 60_000, True))  # flaky: a sliding window would refuse a restart here
def test_on_failure_restarts_at_most_max_retries_in_a_fixed_window_then_stays_stopped(w) -> None:
    """At most max_retries restarts in any fixed 5-minute window; the first refusal is final."""
    seed, retries, boot_ms, delay_ms, crash_ms, flaky = w
    app = _flaky_or_looping(crash_ms, flaky)
    env, machine = _restart_rule_machine(seed, retries, boot_ms, delay_ms)
    machine.launch(Image("app:v1", app))
    env.run(until=3_000)
    exits = [e for e in _exits(machine) if e.is_crash]
    restarted = [e.timestamp / 1000 for e in exits if e.restarting]
    assert all(len(g) <= retries for g in _windows(restarted))
    refused = [e for e in exits if not e.restarting]
    if refused:
        # It gave up only with a full window, and nothing happened after that exit.
        gave_up = refused[0].timestamp / 1000
        assert len(refused) == 1
        assert exits[-1] is refused[0]
        recent = _windows([*restarted, gave_up])[-1]
        assert len(recent) == retries + 1, (restarted, gave_up)
        assert machine.state == "stopped"
        assert machine.history is not None
        at, state = machine.history[-1]
        assert (round(at * 1000), state) == (refused[0].timestamp, "stopped")


def test_fixed_and_sliding_windows_differ_where_restarts_straddle_a_window():
    """Restarts at 0, 250, 310 s (2 retries): fixed opens a window at 310 s, sliding refuses at 330 s."""
    fixed, sliding = RestartBudget(2, WINDOW_S, "fixed"), RestartBudget(2, WINDOW_S, "sliding")
    assert [fixed.restart(t) for t in (0, 250, 310, 330, 340)] == [True, True, True, True, False]
    assert [sliding.restart(t) for t in (0, 250, 310, 330)] == [True, True, True, False]
    assert sliding.restart(600) is False  # refused once: spent, whatever the window says


@given(st.tuples(st.integers(0, 2**32), st.integers(0, 4), st.integers(1, 5_000),
                 st.integers(0, 2_000), st.integers(1, 86_400), st.booleans()))
def test_a_spent_budget_survives_an_autostart(w) -> None:
    """Woken after giving up, a failing machine is not restarted (unless autostart refills)."""
    seed, retries, crash_ms, delay_ms, wake_after_s, refills = w
    app = _flaky_or_looping(crash_ms, flaky=False)
    env, machine = _restart_rule_machine(seed, retries, 400, delay_ms,
                                         autostart_refills_retries=refills)
    machine.launch(Image("app:v1", app))
    env.run(until=400)  # at most 5 retries of a <= 7.4 s cycle: given up by now
    assert machine.state == "stopped"
    assert not _exits(machine)[-1].restarting
    before = len(_exits(machine))
    env.run(until=400 + wake_after_s)
    machine.wake()
    env.run(until=400 + wake_after_s + 400)
    after = _exits(machine)[before:]
    assert machine.state == "stopped"
    if refills:  # a fresh budget: restarted max_retries times again, then given up
        assert [e.restarting for e in after] == [True] * retries + [False]
    else:  # BoomCard's machines: started by the proxy, exit 1, no restart
        assert [e.restarting for e in after] == [False]
