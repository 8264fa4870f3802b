"""Reports of rollout runs and timing checks: one JSON object, or a table people read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from platform_testbed.checks.timing import TimingResult
from platform_testbed.sim.rollout.config import RolloutScenario
from platform_testbed.sim.rollout.expect import Expectation
from platform_testbed.sim.rollout.result import RolloutResult
from platform_testbed.sim.show.table import Table, counted, fit, width, wrap


def timing_json(results: Sequence[TimingResult]) -> list[dict[str, Any]]:
    """Each invariant's verdict with the numbers it was checked on."""
    return [
        {"name": r.name, "ok": r.ok, "rule": r.rule, "numbers": dict(r.numbers)} for r in results
    ]


def aggregate(results: Sequence[RolloutResult]) -> dict[str, Any]:
    """Totals over runs: 502s, the health endpoint's 503s, silent breakage, failed deploys."""
    bad = [r.bad_gateway for r in results]
    return {
        "runs": len(results),
        "bad_gateway_total": sum(bad),
        "bad_gateway_mean": round(sum(bad) / len(bad), 3),
        "bad_gateway_min": min(bad),
        "bad_gateway_max": max(bad),
        "runs_with_bad_gateway": sum(1 for b in bad if b),
        "draining_503_total": sum(r.draining_503 for r in results),
        "non_200_total": sum(r.non_200 for r in results),
        "runs_with_repairs_mid_deploy": sum(1 for r in results if r.repairs_mid_deploy),
        "silent_breakage_runs": sum(1 for r in results if r.silent_breakage),
        "deploys_failed": sum(1 for r in results if r.deploy_status == "failed"),
    }


def rollout_json(
    scenario: RolloutScenario,
    results: Sequence[RolloutResult],
    timing: Sequence[TimingResult],
    expectations: Sequence[Expectation] = (),
) -> dict[str, Any]:
    """The whole report as one JSON-ready mapping."""
    return {
        "scenario": scenario.name,
        "description": scenario.description,
        "config": scenario.model_dump(exclude={"name", "description", "seed", "expect"}),
        "timing": timing_json(timing),
        "runs": [r.summary() for r in results],
        "summary": aggregate(results),
        "expect": [
            {"field": e.field, "expected": e.expected, "held": e.held, "observed": e.observed}
            for e in expectations
        ],
    }


def _share(part: int, whole: int) -> str:
    return f"{part} ({100 * part / whole:.1f}%)" if whole else f"{part}"


def describe(scenario: RolloutScenario) -> str:
    """One line with the numbers that decide the outcome."""
    b, d, w, c = scenario.balancer, scenario.deploy, scenario.watchdog, scenario.compose
    dog = (
        f"watchdog every {w.interval_s:g} s acting on {counted(w.consecutive_failures, 'failure')}"
        f"{', locked' if w.lock else ', no lock'}"
        if w.enabled
        else "no watchdog"
    )
    return (
        f"{scenario.fleet.servers} servers; balancer {b.interval_s:g} s x "
        f"{b.unhealthy_threshold} (healthy {b.healthy_threshold}); serves "
        f"{d.serve_after_drain_s:g} s after drain, grace {d.stop_grace_period_s:g} s; {dog}; "
        f"{c.source} compose; {'verified' if d.verify else 'not verified'}"
    )


def rollout_table(
    scenario: RolloutScenario,
    results: Sequence[RolloutResult],
    timing: Sequence[TimingResult],
    expectations: Sequence[Expectation] = (),
    *,
    rows: bool = True,
    at: int | None = None,
) -> str:
    """A table of runs (``rows=False``: none, for ``--summary``), then the totals and timing."""
    at = width() if at is None else at
    lines = [*wrap(f"rollout {scenario.name}: {describe(scenario)}", at), ""]
    if rows:
        runs = [
            [str(r.seed), r.deploy_status, str(r.requests), str(r.bad_gateway), str(r.draining_503),
             _share(r.non_200, r.answered), _share(r.bad_gateway, r.answered),
             "; ".join(f"{s.name}: {', '.join(s.missing)}" for s in r.servers if s.missing) or "-"]
            for r in results
        ]
        header = ["seed", "deploy", "requests", "502", "drain 503", "all non-200", "502 only",
                  "missing after deploy"]
        lines.append(fit(Table(header, runs, right=frozenset({0, 2, 3, 4, 5, 6}),
                               prose=frozenset({7})), at))
    total = aggregate(results)
    lines += [
        *wrap("(shares are of every response logged: user requests and answered health checks)", at),
        "",
        *wrap(f"over {counted(total['runs'], 'run')}: "
              f"{counted(total['bad_gateway_total'], 'request')} got 502 "
              f"(mean {total['bad_gateway_mean']:g}, min {total['bad_gateway_min']}, "
              f"max {total['bad_gateway_max']}; {counted(total['runs_with_bad_gateway'], 'run')} with "
              f"any); {counted(total['draining_503_total'], 'health-check 503')} while draining "
              "(expected, not failures)", at),
        *wrap("watchdog repaired a server mid-deploy in "
              f"{counted(total['runs_with_repairs_mid_deploy'], 'run')}; deploy reported success "
              f"with a component missing in {counted(total['silent_breakage_runs'], 'run')}; "
              f"{counted(total['deploys_failed'], 'deploy')} failed",
              at),
        "",
        "timing invariants:",
    ]
    for t in timing:
        lines += wrap(t.explain(), at, "  ", "      ")
    if expectations:
        lines += ["", "expectations:"]
        for e in expectations:
            lines += wrap(f"{'held' if e.held else 'NOT MET'}: {e.field} = {e.expected!r} "
                          f"({e.observed})", at, "  ", "      ")
    return "\n".join(lines)


def lint_json(source: str, timing: Sequence[TimingResult]) -> dict[str, Any]:
    """The lint-timing report as one JSON-ready mapping."""
    return {"config": source, "ok": all(t.ok for t in timing), "invariants": timing_json(timing)}


def lint_text(source: str, timing: Sequence[TimingResult], at: int | None = None) -> str:
    """One paragraph per invariant, then the verdict."""
    at = width() if at is None else at
    broken = sum(1 for t in timing if not t.ok)
    verdict = "all timing invariants hold" if not broken else f"{counted(broken, 'invariant')} broken"
    lines = [line for t in timing for line in wrap(t.explain(), at, "", "    ")]
    return "\n".join([*lines, *wrap(f"{source}: {verdict}", at)])
