"""Timing invariants of a drain behind a load balancer: each names the numbers that break it.

Pure arithmetic on the configured numbers, so a real provisioning script can run the same
rules in its CI. Worst-case reasoning: a balancer probing every ``interval_s`` needs
``unhealthy_threshold`` failed probes in a row, and the first one can come up to one
interval after the drain began, so it stops routing at most ``interval_s x
unhealthy_threshold`` after the drain starts.

The fourth is about connections, not the drain: a balancer reuses an idle keep-alive
connection to a target until its own idle timeout, so the server must not close one first.
AWS: "configure the idle timeout of your application to be larger than the idle timeout
configured for the load balancer. Otherwise, if the application closes the TCP connection
to the load balancer ungracefully, the load balancer might send a request to the
application before it receives the packet indicating that the connection is closed. If
this is the case, then the load balancer sends an HTTP 502 Bad Gateway error to the
client" (Elastic Load Balancing, Application Load Balancers, "Edit attributes for your
Application Load Balancer", Connection idle timeout; the Classic Load Balancer's guide says
the same of the HTTP keep-alive time). Measured on HAProxy in docs/rollout.md: a server
idle timeout of 2 s under HAProxy's reuse lost 1.1 requests per deploy, all ``502 SH``.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The longest a freshly started target may wait for the balancer to route to it again.
#: While it waits, the fleet runs one server short, and a rolling deploy of n servers
#: takes at least n times this; a minute keeps a small fleet's deploy within minutes.
DEFAULT_MAX_REHEAL_S = 60.0

DRAIN_RULE = "serve_after_drain_s > interval_s x unhealthy_threshold"
REHEAL_RULE = "interval_s x healthy_threshold <= max_reheal_s"
GRACE_RULE = "serve_after_drain_s + shutdown_s <= stop_grace_period_s"
KEEPALIVE_RULE = "keepalive_timeout_s > idle_timeout_s"


@dataclass(frozen=True, slots=True)
class TimingResult:
    """One invariant's verdict: whether it holds, its rule, and the numbers it was checked on."""

    name: str
    ok: bool
    rule: str
    numbers: tuple[tuple[str, float], ...]

    def explain(self) -> str:
        """One line: the verdict, the rule and the numbers."""
        shown = ", ".join(f"{key}={value:g}" for key, value in self.numbers)
        verdict = "ok" if self.ok else "BROKEN"
        return f"{verdict}: {self.name}: {self.rule} ({shown})"


@dataclass(frozen=True, slots=True)
class DrainTiming:
    """The numbers the invariants tie together.

    ``keepalive_timeout_s`` (the server's idle keep-alive timeout) and ``idle_timeout_s``
    (the balancer's connection idle timeout): with both, the fourth invariant is checked
    too; without (a caller of the three drain rules alone), it is not.
    """

    interval_s: float
    unhealthy_threshold: int
    healthy_threshold: int
    serve_after_drain_s: float
    shutdown_s: float
    stop_grace_period_s: float
    keepalive_timeout_s: float | None = None
    idle_timeout_s: float | None = None
    #: HAProxy's ``spread-checks``: each check interval varied by up to +/- this percent,
    #: so the longest is ``interval_s x (1 + spread_checks_pct / 100)``. 0: exact intervals.
    spread_checks_pct: float = 0.0


def _spread(rule: str, spread_checks_pct: float) -> str:
    """A rule with its intervals at their longest, when the checks are spread."""
    if spread_checks_pct <= 0:
        return rule
    return rule.replace("interval_s x", "interval_s x (1 + spread_checks_pct / 100) x")


def _spread_numbers(spread_checks_pct: float) -> tuple[tuple[str, float], ...]:
    return (("spread_checks_pct", spread_checks_pct),) if spread_checks_pct > 0 else ()


def drain_outlasts_detection(
    serve_after_drain_s: float, interval_s: float, unhealthy_threshold: int,
    spread_checks_pct: float = 0.0,
) -> TimingResult:
    """The server keeps serving until the balancer has certainly stopped routing to it.

    With spread checks every interval may be the longest, the first one included.
    """
    detection_s = interval_s * (1 + spread_checks_pct / 100) * unhealthy_threshold
    return TimingResult(
        name="drain outlasts detection",
        ok=serve_after_drain_s > detection_s,
        rule=_spread(DRAIN_RULE, spread_checks_pct),
        numbers=(
            ("serve_after_drain_s", serve_after_drain_s),
            ("interval_s", interval_s),
            *_spread_numbers(spread_checks_pct),
            ("unhealthy_threshold", unhealthy_threshold),
            ("detection_s", detection_s),
            ("margin_s", serve_after_drain_s - detection_s),
        ),
    )


def reheal_is_short(
    interval_s: float, healthy_threshold: int, max_reheal_s: float = DEFAULT_MAX_REHEAL_S,
    spread_checks_pct: float = 0.0,
) -> TimingResult:
    """A restarted target is back in rotation within ``max_reheal_s`` (intervals at their longest)."""
    reheal_s = interval_s * (1 + spread_checks_pct / 100) * healthy_threshold
    return TimingResult(
        name="re-healthy time is short",
        ok=reheal_s <= max_reheal_s,
        rule=_spread(REHEAL_RULE, spread_checks_pct),
        numbers=(
            ("interval_s", interval_s),
            *_spread_numbers(spread_checks_pct),
            ("healthy_threshold", healthy_threshold),
            ("reheal_s", reheal_s),
            ("max_reheal_s", max_reheal_s),
        ),
    )


def drain_fits_grace(
    serve_after_drain_s: float, shutdown_s: float, stop_grace_period_s: float
) -> TimingResult:
    """Drain plus shutdown end before the container runtime force-kills the container."""
    needed_s = serve_after_drain_s + shutdown_s
    return TimingResult(
        name="drain fits the stop grace period",
        ok=needed_s <= stop_grace_period_s,
        rule=GRACE_RULE,
        numbers=(
            ("serve_after_drain_s", serve_after_drain_s),
            ("shutdown_s", shutdown_s),
            ("needed_s", needed_s),
            ("stop_grace_period_s", stop_grace_period_s),
        ),
    )


def keepalive_outlasts_idle(keepalive_timeout_s: float, idle_timeout_s: float) -> TimingResult:
    """The balancer, not the server, closes an idle keep-alive connection (see the module)."""
    return TimingResult(
        name="server keep-alive outlasts the balancer's idle timeout",
        ok=keepalive_timeout_s > idle_timeout_s,
        rule=KEEPALIVE_RULE,
        numbers=(
            ("keepalive_timeout_s", keepalive_timeout_s),
            ("idle_timeout_s", idle_timeout_s),
            ("margin_s", keepalive_timeout_s - idle_timeout_s),
        ),
    )


def check_timing(timing: DrainTiming, max_reheal_s: float = DEFAULT_MAX_REHEAL_S) -> tuple[TimingResult, ...]:
    """The three drain invariants, then the keep-alive one when both its numbers are given."""
    drain = (
        drain_outlasts_detection(timing.serve_after_drain_s, timing.interval_s,
                                 timing.unhealthy_threshold, timing.spread_checks_pct),
        reheal_is_short(timing.interval_s, timing.healthy_threshold, max_reheal_s,
                        timing.spread_checks_pct),
        drain_fits_grace(timing.serve_after_drain_s, timing.shutdown_s, timing.stop_grace_period_s),
    )
    if timing.keepalive_timeout_s is None or timing.idle_timeout_s is None:
        return drain
    return (*drain, keepalive_outlasts_idle(timing.keepalive_timeout_s, timing.idle_timeout_s))


def all_hold(results: tuple[TimingResult, ...]) -> bool:
    """True when every invariant holds."""
    return all(r.ok for r in results)
