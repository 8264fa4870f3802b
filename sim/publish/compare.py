"""Run several checks in the same worlds and gather their results as plain data."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from checks import Check, Event
from sim.publish.world import RecordedLook, RunResult, ground_truth, run_checks
from sim.scenario import OUTCOMES, Scenario


def _event_json(event: Event, publish_started_ms: int) -> dict[str, Any]:
    data: dict[str, Any] = {
        "type": event.type,
        "status": event.status,
        "at_s": (event.timestamp - publish_started_ms) / 1000,
    }
    if event.type == "exit":
        data |= {
            "exit_code": event.exit_code,
            "oom_killed": event.oom_killed,
            "requested_stop": event.requested_stop,
            "restarting": event.restarting,
            "restart_count": event.restart_count,
        }
    return data


def look_json(recorded: RecordedLook, publish_started_ms: int) -> dict[str, Any]:
    """A look as compact JSON: times in seconds after the publish began."""
    return {
        "at_s": (recorded.look.at_ms - publish_started_ms) / 1000,
        "machines": [
            {
                "id": m.id,
                "state": m.state,
                "image": m.image,
                "dropped": dropped,
                "events": [_event_json(e, publish_started_ms) for e in m.events],
            }
            for m, dropped in zip(recorded.look.machines, recorded.dropped, strict=True)
        ],
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def result_json(result: RunResult, publish_started_ms: int) -> dict[str, Any]:
    """One check's result in one world, in the shape the CLI contract gives."""
    verdict = result.verdict
    return {
        "check": result.check,
        "verdict": None if verdict is None else ("pass" if verdict.ok else "fail"),
        "reason": result.error if verdict is None else verdict.reason,
        "machine": None if verdict is None else verdict.machine,
        "decided_at_s": _round(result.decided_at_s),
        "outcome": result.outcome,
        "rollback": result.rollback,
        "late_failure_at_s": _round(result.late_failure_at_s),
        "site": {
            "requests": result.site.requests,
            "served": result.site.served,
            "not_found": result.site.not_found,
            "bad_gateway": result.site.bad_gateway,
            "down_s": result.site.down_s,
        },
        "looks": [look_json(look, publish_started_ms) for look in result.looks],
    }


def compare(
    scenario: Scenario,
    checks: Sequence[Check],
    seeds: Iterable[int],
    on_result: Callable[[RunResult], None] | None = None,
) -> dict[str, Any]:
    """Every check in every seed's world; the release's badness is judged once per seed.

    ``on_result`` sees each run's full result (e.g. to record its looks) as it finishes.
    """
    publish_started_ms = scenario.platform.epoch_ms + round(scenario.publish.at_s * 1000)
    runs = []
    summary: dict[str, dict[str, int]] = {
        getattr(c, "name", type(c).__name__): dict.fromkeys(OUTCOMES, 0) for c in checks
    }
    failures = []
    for seed in seeds:
        results = run_checks(scenario, seed, checks)
        bad = results[0].bad if results else ground_truth(scenario, seed)
        for result in results:
            if on_result is not None:
                on_result(result)
            summary[result.check][result.outcome] += 1
            expected = scenario.expect.get(result.check)
            if expected is not None and expected != result.outcome:
                failures.append(
                    {"seed": seed, "check": result.check, "expected": expected,
                     "outcome": result.outcome}
                )
        runs.append(
            {
                "seed": seed,
                "release_bad": bad,
                "results": [result_json(r, publish_started_ms) for r in results],
            }
        )
    return {
        "scenario": scenario.name,
        "description": scenario.description,
        "runs": runs,
        "summary": {name: {k: v for k, v in counts.items() if v} for name, counts in summary.items()},
        "expect": dict(scenario.expect),
        "expectations_failed": failures,
    }
