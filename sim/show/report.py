"""Human-readable output: checks side by side, and a summary over seeds."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sim.publish.compare import reason, verdict_word
from sim.scenario import OUTCOMES

if TYPE_CHECKING:
    from sim.loader import CheckSetup
    from sim.publish.compare import Comparison, OutcomeCounts, SeedRun
    from sim.publish.world import RunResult
    from sim.recording import ReplayRow

# Outcomes a person must not miss are shouted.
LOUD = {"missed": "MISSED", "false_alarm": "FALSE ALARM", "error": "ERROR"}
#: Sources in the order they override each other (README "Check options").
_SOURCES = ("--check-opt", "scenario", "default")


def _s(value: float | None) -> str:
    return "-" if value is None else f"+{value:.1f} s"


def _value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def options_line(setup: CheckSetup) -> str:
    """A check's options grouped by where they came from: ``k=v, k=v (default)``."""
    groups = []
    for source in _SOURCES:
        mine = [f"{o.key}={_value(o.value)}" for o in setup.options if o.source == source]
        if mine:
            groups.append(f"{', '.join(mine)} ({source})")
    return "; ".join(groups) or "no options"


def options(setups: Sequence[CheckSetup]) -> list[str]:
    """The header lines saying which options each check ran with, and from where."""
    if not setups:
        return []
    width = max(len(s.name) for s in setups) + 2
    lines = ["options (default < scenario [check] < --check-opt):"]
    for setup in setups:
        wrapped = textwrap.wrap(options_line(setup), width=96 - width - 2)
        lines.append(f"  {setup.name:<{width}}{wrapped[0]}")
        lines += [" " * (width + 2) + more for more in wrapped[1:]]
    return [*lines, ""]


def _rows(result: RunResult) -> list[tuple[str, str]]:
    site = result.site
    return [
        ("verdict", verdict_word(result) or "none"),
        ("decided at", _s(result.decided_at_s)),
        ("looks taken", str(len(result.looks))),
        ("outcome", LOUD.get(result.outcome, result.outcome)),
        ("rollback", result.rollback or "-"),
        ("late failure", _s(result.late_failure_at_s)),
        ("site down (404)", f"{site.down_s:.1f} s"),
        ("requests", str(site.requests)),
        ("  served", str(site.served)),
        ("  404", str(site.not_found)),
        ("  502", str(site.bad_gateway)),
    ]


def side_by_side(report: Comparison, run: SeedRun, debug: bool = False) -> str:
    """One world: a column per check, then each check's reason in full.

    With ``debug``, the traceback of each check that raised follows its reason.
    """
    results = run.results
    truth = "bad (its machines crash after the publish)" if run.release_bad else "good"
    lines = [f"{report.scenario} · seed {run.seed} · the release is {truth}", "",
             *options(report.setups)]
    table = [("", [r.check for r in results])]
    rows = [_rows(r) for r in results]
    for i, (label, _) in enumerate(rows[0]):
        table.append((label, [row[i][1] for row in rows]))
    width = max(len(label) for label, _ in table) + 2
    col = max(14, *(len(v) for _, values in table for v in values)) + 2
    for label, values in table:
        lines.append(f"{label:<{width}}" + "".join(f"{v:<{col}}" for v in values).rstrip())
    lines.append("")
    for r in results:
        wrapped = textwrap.fill(
            reason(r), width=96, initial_indent=f"{r.check}: ",
            subsequent_indent=" " * (len(r.check) + 2),
        )
        lines.append(wrapped)
        if debug and r.error_detail:
            lines += ["    " + line for line in r.error_detail.rstrip().splitlines()]
    lines.append("")
    lines.append("times are seconds after the publish began; 'site down' counts 404s only")
    return "\n".join(lines)


def summary(report: Comparison, debug: bool = False) -> str:
    """Many seeds: outcome counts per check, with mean downtime and decision time.

    With ``debug``, the first traceback of each check that raised follows the table.
    """
    outcomes = list(OUTCOMES)
    first, last = report.seed_range or (0, 0)
    lines = [
        f"{report.scenario} · {report.runs_count} seeds ({first}…{last})",
        "",
        *options(report.setups),
        f"{'check':<20}" + "".join(f"{o:>12}" for o in outcomes) + f"{'mean down':>12}"
        + f"{'mean decide':>13}",
    ]
    for name, counts in report.summary.items():
        stats = report.stats[name]
        mean = stats.mean_decided_s
        decide = "-" if mean is None else f"{mean:.1f} s"
        lines.append(
            f"{name:<20}" + "".join(f"{counts.count(o):>12}" for o in outcomes)
            + f"{stats.mean_down_s:>10.1f} s" + f"{decide:>13}"
        )
    if debug:
        for name in report.summary:
            stats = report.stats[name]
            if stats.first_error_detail:
                lines.append(f"\n{name} raised on seed {stats.first_error_seed} "
                             f"({stats.errors} run(s)):")
                lines += ["    " + line for line in stats.first_error_detail.splitlines()]
    return "\n".join(lines)


def expectations(report: Comparison) -> str:
    """What the scenario's [expect] declared for the checks that ran, and whether it held."""
    lines = []
    if report.expect:
        failed = report.expectations_failed
        if not failed:
            held = ", ".join(f"{k} {v}" for k, v in report.expect.items())
            lines.append(f"expectations held: {held}")
        else:
            lines.append("expectations FAILED:")
            lines += [
                f"  seed {f.seed}: {f.check} expected {f.expected}, got {f.outcome}"
                for f in failed
            ]
    if report.expect_not_run:
        lines.append(f"not judged (did not run): {', '.join(report.expect_not_run)}")
    return "\n".join(lines)


def replayed(path: str, rows: Sequence[ReplayRow], debug: bool = False) -> str:
    """Replay results: a line per (recorded run, check), reasons wrapped beneath."""
    lines = [f"{path}: {len(rows)} replay(s)", ""]
    # Each distinct setup once: a recording of many runs usually builds each check alike.
    seen = list({(r.setup.name, options_line(r.setup)): r.setup for r in rows}.values())
    lines += options(seen)
    header = f"{'run':<28}{'check':<20}{'verdict':<9}{'decided':>10}{'looks':>12}"
    lines.append(header)
    for row in rows:
        looks = f"{row.looks_used}/{row.looks_recorded}"
        lines.append(
            f"{(row.run or '-'):<28}{row.check:<20}{row.verdict or 'none':<9}"
            f"{_s(row.decided_at_s):>10}{looks:>12}"
        )
        lines.append(textwrap.fill(row.reason, width=96, initial_indent="    ",
                                   subsequent_indent="    "))
        if debug and row.error_detail:
            lines += ["      " + line for line in row.error_detail.rstrip().splitlines()]
    return "\n".join(lines)


def _tally(counts: OutcomeCounts | None) -> str:
    if counts is None:
        return "-"
    ordered = sorted(counts.nonzero().items(), key=lambda kv: (-kv[1], OUTCOMES.index(kv[0])))
    return ", ".join(f"{outcome.replace('_', ' ')} {n}" for outcome, n in ordered)


def checks_table(rules: Mapping[str, str], reports: Sequence[Comparison], runs: int) -> str:
    """A Markdown table: each check, the rule it models, its outcomes on each scenario."""
    names = [r.scenario for r in reports]
    lines = [
        "| check | rule it models | " + " | ".join(f"`{n}`" for n in names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for check, rule in rules.items():
        cells = [_tally(r.summary.get(check)) for r in reports]
        lines.append(f"| `{check}` | {rule} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Outcomes over {runs} seeds per scenario, from each scenario's own seed.")
    return "\n".join(lines)
