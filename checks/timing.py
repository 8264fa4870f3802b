"""Timing invariants of a drain behind a load balancer: each names the numbers that break it.

Pure arithmetic on the configured numbers, so a real provisioning script can run the same
rules in its CI. Worst-case reasoning: a balancer probing every ``interval_s`` needs
``unhealthy_threshold`` failed probes in a row, and the first one can come up to one
interval after the drain began, so it stops routing at most ``interval_s x
unhealthy_threshold`` after the drain starts.
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
    """The numbers the three invariants tie together."""

    interval_s: float
    unhealthy_threshold: int
    healthy_threshold: int
    serve_after_drain_s: float
    shutdown_s: float
    stop_grace_period_s: float


def drain_outlasts_detection(
    serve_after_drain_s: float, interval_s: float, unhealthy_threshold: int
) -> TimingResult:
    """The server keeps serving until the balancer has certainly stopped routing to it."""
    detection_s = interval_s * unhealthy_threshold
    return TimingResult(
        name="drain outlasts detection",
        ok=serve_after_drain_s > detection_s,
        rule=DRAIN_RULE,
        numbers=(
            ("serve_after_drain_s", serve_after_drain_s),
            ("interval_s", interval_s),
            ("unhealthy_threshold", unhealthy_threshold),
            ("detection_s", detection_s),
            ("margin_s", serve_after_drain_s - detection_s),
        ),
    )


def reheal_is_short(
    interval_s: float, healthy_threshold: int, max_reheal_s: float = DEFAULT_MAX_REHEAL_S
) -> TimingResult:
    """A restarted target is back in rotation within ``max_reheal_s``."""
    reheal_s = interval_s * healthy_threshold
    return TimingResult(
        name="re-healthy time is short",
        ok=reheal_s <= max_reheal_s,
        rule=REHEAL_RULE,
        numbers=(
            ("interval_s", interval_s),
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


def check_timing(timing: DrainTiming, max_reheal_s: float = DEFAULT_MAX_REHEAL_S) -> tuple[TimingResult, ...]:
    """All three invariants, in a fixed order."""
    return (
        drain_outlasts_detection(timing.serve_after_drain_s, timing.interval_s, timing.unhealthy_threshold),
        reheal_is_short(timing.interval_s, timing.healthy_threshold, max_reheal_s),
        drain_fits_grace(timing.serve_after_drain_s, timing.shutdown_s, timing.stop_grace_period_s),
    )


def all_hold(results: tuple[TimingResult, ...]) -> bool:
    """True when every invariant holds."""
    return all(r.ok for r in results)
