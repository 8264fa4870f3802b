"""The rollout model's parts on their own: stop plan, balancer, server, watchdog, traffic."""

from __future__ import annotations

import itertools
import math
import random

import simpy

from platform_testbed.sim.rollout.balancer import (
    HealthRules,
    LoadBalancer,
    first_probes,
    judge,
    next_interval,
)
from platform_testbed.sim.rollout.balancer import in_rotation as rotation_of
from platform_testbed.sim.rollout.drain import StopPlan, stop_plan
from platform_testbed.sim.rollout.server import COMPONENTS, FULL_COMPOSE, Server
from platform_testbed.sim.rollout.traffic import RoutingTimeline
from platform_testbed.sim.rollout.watchdog import Watchdog, WatchdogRules, looks_broken

RULES = HealthRules(interval_s=5, unhealthy_threshold=2, healthy_threshold=3)


def _server(env: simpy.Environment, template: object = FULL_COMPOSE) -> Server:
    return Server(env, "s1", "v1", template, lambda: None)  # type: ignore[arg-type]


def test_stop_plan_within_grace_serves_then_shuts_down() -> None:
    """When drain + shutdown fit the grace period, the api serves the full drain, then exits."""
    assert stop_plan(15, 5, 30) == StopPlan(15, 20, force_killed=False)


def test_stop_plan_exactly_at_grace_is_not_killed() -> None:
    """Finishing exactly at the grace period is a clean exit."""
    assert stop_plan(15, 15, 30) == StopPlan(15, 30, force_killed=False)


def test_stop_plan_kill_after_serving() -> None:
    """A shutdown overrunning the grace period is killed at the grace period."""
    assert stop_plan(15, 20, 30) == StopPlan(15, 30, force_killed=True)


def test_stop_plan_kill_cuts_the_serving_window() -> None:
    """A grace period shorter than the drain stops the listener at the kill."""
    assert stop_plan(15, 0, 10) == StopPlan(10, 10, force_killed=True)


def test_judge_marks_unhealthy_after_exactly_the_threshold() -> None:
    """A healthy target stays in after threshold-1 failures and goes out at the threshold."""
    healthy, streak = judge(True, 0, False, RULES)
    assert (healthy, streak) == (True, 1)
    assert judge(True, 1, False, RULES) == (False, 0)


def test_judge_marks_healthy_after_exactly_the_healthy_threshold() -> None:
    """An unhealthy target needs healthy_threshold successes in a row."""
    assert judge(False, 0, True, RULES) == (False, 1)
    assert judge(False, 1, True, RULES) == (False, 2)
    assert judge(False, 2, True, RULES) == (True, 0)


def test_judge_resets_the_streak_on_an_agreeing_result() -> None:
    """A result that agrees with the current opinion resets the streak."""
    assert judge(True, 1, True, RULES) == (True, 0)
    assert judge(False, 2, False, RULES) == (False, 0)


def test_in_rotation_routes_to_healthy_targets_only() -> None:
    """Traffic goes to the targets believed healthy."""
    assert rotation_of([True, False, True]) == (True, False, True)


def test_in_rotation_fails_open_when_none_is_healthy() -> None:
    """With no healthy target, the balancer routes to all of them, like ALB."""
    assert rotation_of([False, False]) == (True, True)


def test_balancer_notices_a_dead_target_within_interval_times_threshold() -> None:
    """A target that stops answering leaves rotation within interval x unhealthy_threshold."""
    env = simpy.Environment()
    server = _server(env)
    balancer = LoadBalancer(env, [server], RULES, random.Random(3), lambda: None)
    env.run(until=100)
    server.stop_listening()
    env.run(until=200)
    (transition,) = balancer.transitions
    assert transition.healthy is False
    assert transition.target == 0
    assert 100 + RULES.interval_s < transition.at_s <= 100 + 2 * RULES.interval_s
    failed = [p for p in balancer.probes if p.at_s >= 100]
    assert [p.answer for p in failed[:2]] == ["refused", "refused"]
    assert failed[1].at_s == transition.at_s


def test_a_target_dead_before_the_first_probe_still_needs_the_full_threshold() -> None:
    """The unhealthy streak starts at zero: the first failed probe alone does not flip a target."""
    env = simpy.Environment()
    server = _server(env)
    rules = HealthRules(interval_s=5, unhealthy_threshold=2, healthy_threshold=2)
    balancer = LoadBalancer(env, [server], rules, random.Random(4), lambda: None)
    server.stop_listening()
    first = 1e-9
    env.run(until=5 + first)
    assert [p.answer for p in balancer.probes] == ["refused"]
    assert balancer.healthy == [True]
    env.run(until=10 + first)
    assert balancer.healthy == [False]


def test_balancer_records_which_target_each_probe_and_transition_was_for() -> None:
    """Probes and opinion changes name their target; a recovered target is marked healthy."""
    env = simpy.Environment()
    servers = [_server(env), _server(env)]
    balancer = LoadBalancer(env, servers, RULES, random.Random(6), lambda: None)
    servers[1].stop_listening()
    env.run(until=20)
    servers[1].listening = True
    env.run(until=60)
    assert {p.target for p in balancer.probes} == {0, 1}
    assert sum(1 for p in balancer.probes if p.target == 1 and p.answer == "refused") >= 2
    assert [(t.target, t.healthy) for t in balancer.transitions] == [(1, False), (1, True)]


def test_balancer_rotation_is_its_healthy_targets_and_fails_open() -> None:
    """rotation(): the targets the balancer holds healthy; all of them once none is."""
    env = simpy.Environment()
    balancer = LoadBalancer(env, [_server(env), _server(env)], RULES, random.Random(6), lambda: None)
    balancer.healthy = [True, False]
    assert balancer.rotation() == (True, False)
    balancer.healthy = [False, False]
    assert balancer.rotation() == (True, True)


def test_probe_phases_spread_over_the_whole_first_interval() -> None:
    """Each target's first probe comes uniformly within [0, interval_s)."""
    env = simpy.Environment()
    servers = [_server(env) for _ in range(100)]
    rules = HealthRules(interval_s=2, unhealthy_threshold=2, healthy_threshold=2)
    balancer = LoadBalancer(env, servers, rules, random.Random(8), lambda: None)
    env.run(until=2)
    firsts = [p.at_s for p in balancer.probes]
    assert len(firsts) == 100
    assert min(firsts) < 0.25
    assert max(firsts) > 1.75


def test_balancer_probes_each_target_every_interval() -> None:
    """Probes of one target are exactly interval_s apart."""
    env = simpy.Environment()
    balancer = LoadBalancer(env, [_server(env)], RULES, random.Random(1), lambda: None)
    env.run(until=60)
    times = [p.at_s for p in balancer.probes]
    assert len(times) >= 11
    gaps = {round(b - a, 9) for a, b in itertools.pairwise(times)}
    assert gaps == {5.0}


def test_wait_healthy_fires_only_when_serving_and_marked_healthy() -> None:
    """The deploy's wait ends at the probe that completes healthy_threshold successes."""
    env = simpy.Environment()
    server = _server(env)
    balancer = LoadBalancer(env, [server], RULES, random.Random(2), lambda: None)
    server.stop_all()
    env.run(until=30)
    assert balancer.healthy == [False]
    server.compose_up("v2", 0)
    event = balancer.wait_healthy(0)
    fired: list[float] = []
    event.callbacks.append(lambda _event: fired.append(env.now))
    env.run(until=60)
    (transition,) = [t for t in balancer.transitions if t.healthy]
    oks = [p for p in balancer.probes if p.answer == "ok" and 30 < p.at_s <= transition.at_s]
    assert len(oks) == RULES.healthy_threshold
    assert fired == [transition.at_s]
    assert balancer.healthy == [True]


def test_draining_server_answers_503_but_keeps_listening() -> None:
    """Draining flips the health endpoint to 503 while real requests are still served."""
    env = simpy.Environment()
    server = _server(env)
    server.begin_drain()
    assert server.health() == "draining"
    assert server.listening
    server.stop_listening()
    assert server.health() == "refused"


def test_compose_up_starts_what_the_file_declares() -> None:
    """After stop and compose up, all four components run the new release once booted."""
    env = simpy.Environment()
    server = _server(env)
    server.stop_all()
    server.release = "v2"
    assert server.compose_up("v2", 10)
    env.run(until=10.5)
    assert server.missing("v2") == ()
    assert server.listening
    assert tuple(server.running) == COMPONENTS


def test_rewrite_after_the_deploys_up_drops_the_gateway() -> None:
    """The race won: a drifted copy written while containers boot removes the gateway."""
    env = simpy.Environment()
    server = _server(env, FULL_COMPOSE.without("gateway"))
    server.stop_all()
    server.release = "v2"
    server.write_compose(FULL_COMPOSE)
    server.compose_up("v2", 10)
    env.run(until=5)
    server.write_compose(server.template)
    server.compose_up("v2", 10)
    env.run(until=30)
    assert server.missing("v2") == ("gateway",)
    assert not looks_broken(server)


def test_rewrite_before_the_deploys_write_is_harmless() -> None:
    """The race lost: the deploy's later write restores every component."""
    env = simpy.Environment()
    server = _server(env, FULL_COMPOSE.without("gateway"))
    server.write_compose(server.template)
    assert server.compose_up("v1", 10)
    assert "gateway" not in server.running
    server.stop_all()
    server.release = "v2"
    server.write_compose(FULL_COMPOSE)
    server.compose_up("v2", 10)
    env.run(until=30)
    assert server.missing("v2") == ()


def test_a_draining_server_looks_broken_to_the_watchdog() -> None:
    """The watchdog cannot tell a drain from a crash: a 503 is a failed check."""
    env = simpy.Environment()
    server = _server(env)
    assert not looks_broken(server)
    server.begin_drain()
    assert looks_broken(server)


def test_watchdog_waits_for_consecutive_failures() -> None:
    """With a threshold of 3, the watchdog repairs on the third failed check in a row."""
    env = simpy.Environment()
    server = _server(env, FULL_COMPOSE.without("gateway"))
    rules = WatchdogRules(interval_s=10, consecutive_failures=3, lock=False, repair_s=0)
    dog = Watchdog(
        env,
        server,
        rules,
        random.Random(0),
        start_delay=lambda _rng: 1.0,
        deploying=lambda _s: False,
    )
    server.begin_drain()
    env.run(until=19.999)
    assert dog.repairs == []
    env.run(until=40)
    assert len(dog.repairs) >= 1
    assert dog.repairs[0].at_s >= 20
    assert dog.repairs[0].changed
    assert "gateway" not in server.running


def test_watchdog_skips_while_the_lock_is_held() -> None:
    """A watchdog that shares the lock never checks while someone else holds it."""
    env = simpy.Environment()
    server = _server(env, FULL_COMPOSE.without("gateway"))
    rules = WatchdogRules(interval_s=10, consecutive_failures=1, lock=True, repair_s=0)
    dog = Watchdog(
        env,
        server,
        rules,
        random.Random(0),
        start_delay=lambda _rng: 1.0,
        deploying=lambda _s: True,
    )
    holder = server.lock.request()
    server.begin_drain()
    env.run(until=100)
    assert dog.repairs == []
    assert dog.skipped >= 9
    server.lock.release(holder)
    env.run(until=120)
    assert len(dog.repairs) >= 1


def test_timeline_drops_repeats_and_replaces_same_instant_changes() -> None:
    """Unchanged marks add no segment; two marks at one instant keep the last."""
    timeline = RoutingTimeline((True, True), (True, True))
    timeline.mark(1.0, (True, True), (True, True))
    assert len(timeline.segments) == 1
    timeline.mark(2.0, (True, True), (True, False))
    timeline.mark(2.0, (True, False), (True, False))
    assert [(s.at_s, s.rotation) for s in timeline.segments] == [
        (0.0, (True, True)),
        (2.0, (True, False)),
    ]


def test_tally_counts_502_only_for_targets_not_listening() -> None:
    """Requests routed to a target in rotation but not listening are 502s; the rest served."""
    timeline = RoutingTimeline((True, True), (True, True))
    timeline.mark(100.0, (True, True), (True, False))
    timeline.mark(200.0, (True, False), (True, False))
    tally = timeline.tally(0, 300, 10, 5)
    assert tally.requests == tally.served + tally.bad_gateway
    assert tally.bad_gateway_by_target[0] == 0
    # About half of 100 s x 10 rps went to the target that was not listening.
    assert 350 < tally.bad_gateway < 650
    assert tally.bad_gateway == tally.bad_gateway_by_target[1]


def test_tally_without_traffic_counts_nothing() -> None:
    """Zero requests per second draws no requests."""
    tally = RoutingTimeline((True,), (False,)).tally(0, 100, 0, 1)
    assert (tally.requests, tally.served, tally.bad_gateway) == (0, 0, 0)


def test_random_schedule_first_probes_are_the_uniform_draws_in_target_order() -> None:
    """The default schedule: target k's first probe is the k-th uniform draw of the stream."""
    draws = random.Random(11)
    assert first_probes(RULES, 4, random.Random(11)) == [draws.uniform(0, 5) for _ in range(4)]


def test_staggered_schedule_spaces_targets_an_nth_of_an_interval_apart() -> None:
    """HAProxy's schedule: one drawn start, target k k/n of an interval after it (mod one
    interval), and the stream left where the random schedule leaves it (seeds pair)."""
    rules = HealthRules(interval_s=6, unhealthy_threshold=2, healthy_threshold=3,
                        schedule="staggered")
    rng = random.Random(5)
    start = random.Random(5).uniform(0, 6)
    phases = first_probes(rules, 3, rng)
    assert phases[0] == start
    for k, phase in enumerate(phases):
        assert 0 <= phase < 6
        assert math.isclose((phase - start) % 6, 2 * k, abs_tol=1e-9)
    after_random = random.Random(5)
    first_probes(RULES, 3, after_random)
    assert rng.random() == after_random.random()


def test_next_interval_is_exact_without_spread_and_within_it_with() -> None:
    """spread_checks_pct 0: exactly interval_s and no draw; 10: within +/- 10 %, not constant."""
    rng, untouched = random.Random(9), random.Random(9)
    assert {next_interval(RULES, rng) for _ in range(50)} == {5}
    assert rng.random() == untouched.random()
    spread = HealthRules(interval_s=10, unhealthy_threshold=2, healthy_threshold=3, spread_pct=10)
    waits = [next_interval(spread, rng) for _ in range(500)]
    assert all(9 <= w <= 11 for w in waits)
    assert min(waits) < 9.2
    assert max(waits) > 10.8


def test_a_staggered_balancer_probes_its_targets_an_nth_of_an_interval_apart() -> None:
    """In a run: with 3 targets and 6 s, consecutive probes are 2 s apart, targets in turn."""
    env = simpy.Environment()
    rules = HealthRules(interval_s=6, unhealthy_threshold=2, healthy_threshold=3,
                        schedule="staggered")
    balancer = LoadBalancer(env, [_server(env) for _ in range(3)], rules, random.Random(2),
                            lambda: None)
    env.run(until=60)
    times = [p.at_s for p in balancer.probes]
    assert len(times) == 30
    assert all(math.isclose(b - a, 2, abs_tol=1e-9) for a, b in itertools.pairwise(times))
    order = [p.target for p in balancer.probes[:3]]
    assert sorted(order) == [0, 1, 2]
    assert [p.target for p in balancer.probes] == order * 10


class _Edge(random.Random):
    """A stream whose uniform draws are the top of their range."""

    def uniform(self, a: float, b: float) -> float:
        return b


def test_next_interval_spreads_by_exactly_the_percent_of_the_interval() -> None:
    """At the top of its draw a 10 % spread of 10 s is 11 s; any spread above 0 draws, 0.5 % too."""
    spread = HealthRules(interval_s=10, unhealthy_threshold=2, healthy_threshold=3, spread_pct=10)
    assert next_interval(spread, _Edge()) == 11
    small = HealthRules(interval_s=10, unhealthy_threshold=2, healthy_threshold=3, spread_pct=0.5)
    assert next_interval(small, _Edge()) == 10.05


def test_a_spread_balancer_varies_each_targets_interval_within_the_spread() -> None:
    """In a run, with spread-checks 10 %: a target's probes are 4.5-5.5 s apart, not all equal."""
    env = simpy.Environment()
    rules = HealthRules(interval_s=5, unhealthy_threshold=2, healthy_threshold=3, spread_pct=10)
    balancer = LoadBalancer(env, [_server(env)], rules, random.Random(3), lambda: None)
    env.run(until=200)
    gaps = [b.at_s - a.at_s for a, b in itertools.pairwise(balancer.probes)]
    assert len(gaps) > 30
    assert all(4.5 <= gap <= 5.5 for gap in gaps)
    assert len({round(gap, 6) for gap in gaps}) > 10
