"""The simulated platform: lifecycle, restart policies, rollback, reconciler, traffic."""

from __future__ import annotations

import random

import simpy

from checks import TimestampCheck
from sim import scenario
from sim.platform.behavior import Behavior
from sim.platform.machine import Image, Machine, PlatformRules
from sim.publish import world


def _machine(behavior: Behavior, **rules) -> tuple[simpy.Environment, Machine]:
    env = simpy.Environment()
    machine = Machine(env, "m1", PlatformRules(jitter=0.0, **rules), random.Random(0), trace=True)
    machine.launch(Image("app:v1", behavior))
    return env, machine


def test_on_failure_gives_up_after_max_retries_and_says_so():
    """on-failure with max_retries=3: four crashes, then stopped with restarting=false."""
    env, machine = _machine(Behavior("crash_after", crash_after_s=1.0), max_retries=3)
    env.run(until=60)
    exits = [e for e in machine.all_events if e.type == "exit"]
    assert len(exits) == 4
    assert [e.restarting for e in exits] == [True, True, True, False]
    assert [e.restart_count for e in exits] == [0, 1, 2, 3]
    assert machine.state == "stopped"
    assert machine.snapshot().gave_up


def test_always_keeps_restarting():
    """restart policy `always` never gives up."""
    env, machine = _machine(Behavior("crash_after", crash_after_s=1.0), restart_policy="always",
                            boot_s=0.5, restart_delay_s=0.5)
    env.run(until=100)
    assert len(machine.crashes) == 50
    assert not machine.snapshot().gave_up


def test_no_restart_policy_stops_after_the_first_crash():
    """restart policy `no`: one crash and the machine stays stopped."""
    env, machine = _machine(Behavior("crash_after", crash_after_s=1.0), restart_policy="no")
    env.run(until=60)
    assert len(machine.crashes) == 1
    assert machine.state == "stopped"


def test_event_list_is_capped_and_counts_dropped_events():
    """The machine's list holds event_log_cap events; the rest are counted as dropped."""
    env, machine = _machine(Behavior("crash_after", crash_after_s=1.0), event_log_cap=5,
                            restart_policy="always")
    env.run(until=30)
    assert len(machine.log) == 5
    assert machine.log.dropped == len(machine.all_events) - 5


def test_crash_after_starts_is_healthy_for_the_first_k_starts():
    """crash_after_starts=2: the first two starts stay up (until interrupted), the third crashes."""
    behavior = Behavior("crash_after_starts", crash_after_starts=2, crash_after_s=1.0)
    rng = random.Random(0)
    assert behavior.crash(1, rng, 0.0) is None
    assert behavior.crash(2, rng, 0.0) is None
    assert behavior.crash(3, rng, 0.0) is not None


def test_oom_exits_with_137_and_oom_killed():
    """The oom behaviour exits with code 137 and oom_killed set."""
    env, machine = _machine(Behavior("oom", crash_after_s=2.0), restart_policy="no")
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
    assert result.verdict.layer == "start-timeout"


def test_asleep_previous_machines_are_stopped_when_the_publish_begins():
    """With [previous] asleep = true the machines are stopped (a requested stop) at the publish."""
    loaded = scenario.load("sleeping-api-crash-on-boot")
    built = world.build(loaded, 1)
    built.env.process(world._previous_release(built))
    built.env.run(until=loaded.publish.at_s - 0.001)
    machine = built.machines[0]
    assert machine.state == "stopped"
    newest = machine.snapshot().events[0]
    assert newest.type == "exit"
    assert newest.requested_stop
    assert not newest.is_crash


def test_restore_rollback_puts_the_previous_image_back():
    """After a caught publish with restore, the machines run the previous image and stay up."""
    loaded = scenario.load("sept25-crash-loop")
    result = world.run(loaded, 1, TimestampCheck(**loaded.check.model_dump()), trace=True)
    assert result.rollback == "restored"
    built = world.build(loaded, 1)
    assert result.trace is not None
    last_update = [e for e in result.trace.machines[0].events if e.type == "update"][-1]
    assert (last_update.timestamp - loaded.platform.epoch_ms) / 1000 > loaded.publish.at_s
    assert result.trace.machines[0].states[-1][1] == "started"
    assert built.previous is not None


def test_world_is_deterministic_for_a_seed():
    """The same scenario and seed give the same looks, verdict and requests."""
    loaded = scenario.load("sept25-crash-loop")
    one = world.run(loaded, 5, TimestampCheck(**loaded.check.model_dump()))
    two = world.run(loaded, 5, TimestampCheck(**loaded.check.model_dump()))
    assert one.looks == two.looks
    assert one.site == two.site
    assert one.verdict == two.verdict


def test_traffic_counts_add_up_and_follow_the_rate():
    """Every request ends as served, 404 or 502, and their number is near rps × duration."""
    loaded = scenario.load("healthy-release", ["traffic.rps=20"])
    result = world.run(loaded, 3, TimestampCheck(**loaded.check.model_dump()))
    site = result.site
    assert site.requests == site.served + site.not_found + site.bad_gateway
    expected = 20 * (loaded.horizon_s - loaded.publish.at_s)
    assert abs(site.requests - expected) < 5 * expected**0.5
