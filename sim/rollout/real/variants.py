"""The configurations compared, their timings scaled by one factor, and the model's side.

All of a rollout file's times are divided by one factor (``--factor``, 20 by default) and
its request rate multiplied by it, so a deploy takes seconds and the counts stay the same;
the model is run with exactly those scaled values (``scaled_sets``), so what is compared is
the model's prediction at the timings the real parts ran with.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from platform_testbed.sim.rollout.config import RolloutScenario, load
from platform_testbed.sim.rollout.world import run as model_run

DEFAULT_FACTOR = 20.0

#: Fields holding seconds, divided by the factor; ``traffic.rps`` is multiplied by it.
TIME_FIELDS = (
    "settle_s",
    "balancer.interval_s",
    "deploy.at_s",
    "deploy.serve_after_drain_s",
    "deploy.shutdown_s",
    "deploy.stop_grace_period_s",
    "deploy.start_min_s",
    "deploy.start_max_s",
    "deploy.healthy_timeout_s",
    "watchdog.interval_s",
    "watchdog.repair_s",
    "timing.max_reheal_s",
    "balancer.idle_timeout_s",  # the keep-alive invariant's: the model's 502s do not read them
    "fleet.keepalive_timeout_s",
)


@dataclass(frozen=True, slots=True)
class Variant:
    """One row of the comparison: a rollout file, overrides, and real-only settings.

    ``server_idle_s`` (the server's keep-alive idle timeout, None: unbounded) and
    ``balancer_idle_s`` (HAProxy's ``timeout server``) are in the rollout file's (unscaled)
    seconds; the model has no keep-alive, so they change only the real side.
    """

    name: str
    scenario: str
    sets: tuple[str, ...] = ()
    server_idle_s: float | None = None
    balancer_idle_s: float = 200.0
    http_reuse: str | None = None
    retries: int = 0
    redispatch: bool = False
    balance: str = "random(1)"
    #: What the variant is about (in the JSON document).
    note: str = ""


#: The three configurations of the write-up.
STANDARD = (
    Variant("original", "original"),
    Variant("intermediate", "intermediate"),
    Variant("fixed", "fixed"),
)
#: Configurations the write-up does not give.
EXTRAS = (
    Variant(
        "fixed + server keep-alive idle 2 s, http-reuse always",
        "fixed",
        server_idle_s=2.0,
        http_reuse="always",
        note="the server closes idle keep-alive connections HAProxy still holds in its pool "
        "(HAProxy keeps them up to pool-purge-delay, 5 s, and timeout server, 10 s)",
    ),
    Variant(
        "fixed + server keep-alive unbounded, http-reuse always (control)",
        "fixed",
        server_idle_s=None,
        http_reuse="always",
        note="the control for the row above: the same reuse, the server never closes first",
    ),
    Variant(
        "original + balance roundrobin",
        "original",
        balance="roundrobin",
        note="an exact 1/3 split per target, where random(1) is HAProxy's consistent-hash draw",
    ),
    Variant(
        "original + HAProxy retries 3, option redispatch",
        "original",
        retries=3,
        redispatch=True,
        note="a refused connection is retried, the last time on another server",
    ),
)


def _get(scenario: RolloutScenario, dotted: str) -> Any:
    obj: Any = scenario
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def scaled_sets(name: str, sets: Sequence[str], factor: float) -> list[str]:
    """``--set`` overrides that divide every time of the file by ``factor`` (rps times it)."""
    base = load(name, list(sets))
    out = list(sets)
    out += [f"{key}={float(_get(base, key)) / factor!r}" for key in TIME_FIELDS]
    out.append(f"traffic.rps={base.traffic.rps * factor!r}")
    return out


def scaled(variant: Variant, factor: float) -> RolloutScenario:
    """The variant's scenario with its times divided by ``factor``."""
    return load(variant.scenario, scaled_sets(variant.scenario, variant.sets, factor))


@dataclass(frozen=True, slots=True)
class DeployFigures:
    """One deploy's figures, real or modelled."""

    lost: int
    health_503: int
    served: int
    requests: int
    detail: dict[str, Any] = field(default_factory=dict)


def model_deploys(variant: Variant, factor: float, seeds: Sequence[int]) -> list[DeployFigures]:
    """The model's figures at the scaled timings, one per seed."""
    scenario = scaled(variant, factor)
    out = []
    for seed in seeds:
        r = model_run(scenario, seed)
        out.append(DeployFigures(r.bad_gateway, r.draining_503, r.served, r.requests,
                                 {"deploy": r.deploy_status}))
    return out


def start_delays(scenario: RolloutScenario, seed: int) -> list[float]:
    """The start times the model draws for ``seed``, server by server.

    ``sim.rollout.world.run`` derives five child streams from ``random.Random(seed)`` in a
    fixed order (balancer, watchdog, deploy, drift, traffic) and the deploy draws one
    ``uniform(start_min_s, start_max_s)`` per server from the third. The real deploy of
    the same seed uses the same draws, so real and model deploys of one seed are paired:
    they differ only in probe phases, arrivals and what the real parts do.
    ``tests/test_lb_real.py`` checks these against the model's own trace.
    """
    root = random.Random(seed)
    streams = [random.Random(root.getrandbits(64)) for _ in range(5)]
    d = scenario.deploy
    return [streams[2].uniform(d.start_min_s, d.start_max_s) for _ in range(scenario.fleet.servers)]


def model_unscaled(variant: Variant, seeds: Sequence[int]) -> list[int]:
    """The model's 502s at the file's own timings, for the check that scaling changes nothing."""
    scenario = load(variant.scenario, list(variant.sets))
    return [model_run(scenario, seed).bad_gateway for seed in seeds]
