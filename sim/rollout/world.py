"""One simulated rolling deploy: build the fleet, balancer, watchdogs and deploy, run, tally."""

from __future__ import annotations

import random
from dataclasses import dataclass

import simpy

from platform_testbed.sim.config.options import limit, option
from platform_testbed.sim.config.settings import BadInput
from platform_testbed.sim.rollout.balancer import HealthRules, LoadBalancer
from platform_testbed.sim.rollout.config import RolloutScenario
from platform_testbed.sim.rollout.deploy import DeployRules, RollingDeploy
from platform_testbed.sim.rollout.drain import stop_plan
from platform_testbed.sim.rollout.result import RolloutResult, ServerOutcome, Trace
from platform_testbed.sim.rollout.server import FULL_COMPOSE, Server
from platform_testbed.sim.rollout.traffic import RoutingTimeline
from platform_testbed.sim.rollout.watchdog import Watchdog, WatchdogRules

OLD_RELEASE, NEW_RELEASE = "v1", "v2"

#: The most simulated events (balancer probes and watchdog looks) one rollout run may be
#: estimated to take. Measured on this project's 2-core machine: 250,000 to 450,000 such
#: events a second, so the limit is 10 to 20 s of one core and the probes it keeps
#: (about 100 bytes each) stay under half a GiB; every shipped rollout takes under 10,000.
MAX_ROLLOUT_EVENTS = limit("max_rollout_events", {})  # the registry's (sim.config.options)
ROLLOUT_EVENTS_ENV = str(option("max_rollout_events").env_name)


@dataclass(frozen=True, slots=True)
class WorkEstimate:
    """What one run of a rollout scenario will take, estimated before it starts."""

    horizon_s: float  # simulated seconds, from 0 to the end of settling
    probes: float  # balancer health checks: horizon / interval per server
    watchdog_looks: float  # horizon / interval per server, when the watchdog runs
    requests: float  # users' requests: rps x horizon

    @property
    def events(self) -> float:
        """The events the run's loops schedule: probes and watchdog looks."""
        return self.probes + self.watchdog_looks


def estimate_work(scenario: RolloutScenario) -> WorkEstimate:
    """The horizon and the loops' events of one run, from the scenario alone.

    The deploy updates one server at a time: each takes its stop sequence, then comes up
    within ``start_max_s`` and is marked healthy ``healthy_threshold`` probes later (at
    most ``healthy_timeout_s``, after which the deploy stops). An estimate, not a bound: a
    watchdog repair mid-start can lengthen a step, by at most one more start.
    """
    d, b, w = scenario.deploy, scenario.balancer, scenario.watchdog
    servers = scenario.fleet.servers
    exit_s = stop_plan(d.serve_after_drain_s, d.shutdown_s, d.stop_grace_period_s).exit_s
    healthy_s = min(d.healthy_timeout_s, d.start_max_s + (b.healthy_threshold + 1) * b.interval_s)
    horizon = d.at_s + servers * (exit_s + healthy_s) + scenario.settle_s
    looks = servers * horizon / w.interval_s if w.enabled else 0.0
    # spread-checks can shorten an interval by up to spread_checks_pct of it.
    shortest = b.interval_s * (1 - b.spread_checks_pct / 100)
    return WorkEstimate(horizon, servers * horizon / shortest, looks,
                        scenario.traffic.rps * horizon)


def check_work(scenario: RolloutScenario) -> WorkEstimate:
    """The estimate, or BadInput naming the limit when it is past ``MAX_ROLLOUT_EVENTS``.

    Requests have no limit: they are drawn per routing segment (one Poisson count each),
    so a million requests cost what one does.
    """
    estimate = estimate_work(scenario)
    most = limit("max_rollout_events")
    if estimate.events > most:
        raise BadInput(
            f"{scenario.name}: a run would take about {estimate.events:,.0f} events "
            f"({estimate.probes:,.0f} balancer probes + {estimate.watchdog_looks:,.0f} watchdog "
            f"looks over {estimate.horizon_s:,.0f} simulated s), past the limit of {most:,} "
            f"(fewer fleet.servers, longer balancer.interval_s or watchdog.interval_s, shorter "
            f"settle_s; or set {ROLLOUT_EVENTS_ENV})"
        )
    return estimate


def run(scenario: RolloutScenario, seed: int) -> RolloutResult:
    """Run the deploy of one scenario with one seed; same inputs give the same result.

    BadInput before any work when its estimated events are past the limit (``check_work``).
    """
    check_work(scenario)
    env = simpy.Environment()
    root = random.Random(seed)
    # Child streams in a fixed order, so one part's draws never shift another's.
    balancer_rng, watchdog_rng, deploy_rng, drift_rng, traffic_rng = (
        random.Random(root.getrandbits(64)) for _ in range(5)
    )
    count = scenario.fleet.servers
    drifted = [
        scenario.compose.source == "per-server"
        and drift_rng.random() < scenario.compose.drift_probability
        for _ in range(count)
    ]
    servers: list[Server] = []
    balancer: LoadBalancer | None = None
    timeline: RoutingTimeline | None = None

    def changed() -> None:
        if balancer is not None and timeline is not None:
            timeline.mark(env.now, balancer.rotation(), tuple(s.listening for s in servers))

    width = len(str(count))
    for i in range(count):
        template = FULL_COMPOSE.without("gateway") if drifted[i] else FULL_COMPOSE
        servers.append(Server(env, f"s{i + 1:0{width}d}", OLD_RELEASE, template, changed))
    b = scenario.balancer
    balancer = LoadBalancer(
        env,
        servers,
        HealthRules(b.interval_s, b.unhealthy_threshold, b.healthy_threshold, b.check_schedule,
                    b.spread_checks_pct),
        balancer_rng,
        changed,
    )
    timeline = RoutingTimeline(balancer.rotation(), tuple(s.listening for s in servers))
    d = scenario.deploy
    deploy = RollingDeploy(
        env,
        servers,
        balancer,
        DeployRules(
            d.at_s,
            d.serve_after_drain_s,
            d.shutdown_s,
            d.stop_grace_period_s,
            d.start_min_s,
            d.start_max_s,
            d.healthy_timeout_s,
            d.lock,
            d.verify,
        ),
        NEW_RELEASE,
        deploy_rng,
    )
    w = scenario.watchdog
    watchdogs = []
    if w.enabled:
        rules = WatchdogRules(w.interval_s, w.consecutive_failures, w.lock, w.repair_s)
        watchdogs = [
            Watchdog(
                env,
                s,
                rules,
                random.Random(watchdog_rng.getrandbits(64)),
                start_delay=deploy.start_delay,
                deploying=deploy.deploying,
            )
            for s in servers
        ]
    env.run(until=env.process(deploy.run()))
    end_s = env.now + scenario.settle_s
    if scenario.settle_s > 0:  # simpy refuses to run until "now" (settle_s = 0: no settling)
        env.run(until=end_s)

    traffic = timeline.tally(0.0, end_s, scenario.traffic.rps, traffic_rng.getrandbits(64))
    forced = {step.server for step in deploy.steps if step.force_killed}
    repairs = sorted((r for dog in watchdogs for r in dog.repairs), key=lambda r: r.at_s)
    servers_out = tuple(
        ServerOutcome(
            name=s.name,
            drifted=drifted[i],
            missing=s.missing(NEW_RELEASE),
            force_killed=s.name in forced,
            bad_gateway=traffic.bad_gateway_by_target[i],
            watchdog_repairs=sum(1 for r in repairs if r.server == s.name),
            repairs_mid_deploy=sum(1 for r in repairs if r.server == s.name and r.mid_deploy),
        )
        for i, s in enumerate(servers)
    )
    assert deploy.started_s is not None
    assert deploy.finished_s is not None
    return RolloutResult(
        scenario=scenario.name,
        seed=seed,
        deploy_status=deploy.status,
        deploy_reason=deploy.reason,
        deploy_started_s=deploy.started_s,
        deploy_finished_s=deploy.finished_s,
        end_s=end_s,
        requests=traffic.requests,
        served=traffic.served,
        bad_gateway=traffic.bad_gateway,
        health_ok=sum(1 for p in balancer.probes if p.answer == "ok"),
        draining_503=sum(1 for p in balancer.probes if p.answer == "draining"),
        servers=servers_out,
        trace=Trace(
            probes=tuple(balancer.probes),
            transitions=tuple(balancer.transitions),
            steps=tuple(deploy.steps),
            repairs=tuple(repairs),
            segments=tuple(timeline.segments),
        ),
    )
