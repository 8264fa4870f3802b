"""Human-readable output: checks side by side, and a summary over seeds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from platform_testbed.sim.config.scenario import OUTCOMES
from platform_testbed.sim.publish.compare import READINGS, depends_on, reason, verdict_word
from platform_testbed.sim.show.table import Table, counted, fit, fits, width, wrap

if TYPE_CHECKING:
    from platform_testbed.sim.checkload.loader import CheckSetup
    from platform_testbed.sim.publish.compare import Comparison, OutcomeCounts, ReadingRun, SeedRun
    from platform_testbed.sim.publish.recording import ReplayRow
    from platform_testbed.sim.publish.series import SeriesResult
    from platform_testbed.sim.publish.world import RunResult

# Outcomes a person must not miss are shouted.
LOUD = {"missed": "MISSED", "false_alarm": "FALSE ALARM", "error": "ERROR"}
#: Sources in the order they override each other (README "Check options").
_SOURCES = ("--check-opt", "recording", "scenario", "default")  # recording: a replay's


def _s(value: float | None) -> str:
    return "-" if value is None else f"+{value:.1f} s"


def _s_bare(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


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


def options(setups: Sequence[CheckSetup], at: int | None = None) -> list[str]:
    """The header lines saying which options each check ran with, and from where."""
    if not setups:
        return []
    at = width() if at is None else at
    name = max(len(s.name) for s in setups) + 2
    lines = wrap("options (default < scenario [check] < --check-opt):", at)
    for setup in setups:
        lines += wrap(options_line(setup), at, f"  {setup.name:<{name}}", " " * (name + 2))
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


def side_by_side(
    report: Comparison, run: SeedRun, debug: bool = False, at: int | None = None
) -> str:
    """One world: a column per check (folded or transposed to fit), then each check's reason.

    With ``debug``, the traceback of each check that raised follows its reason.
    """
    at = width() if at is None else at
    results = run.results
    truth = "bad" if run.release_bad else "good"
    lines = [*wrap(f"{report.scenario} · seed {run.seed} · the release is {truth} by the truth "
                   f"{report.truth_label}", at), "",
             *options(report.setups, at)]
    rows = [_rows(r) for r in results]
    body = [[label, *(row[i][1] for row in rows)] for i, (label, _) in enumerate(rows[0])]
    # Checks stay columns at every width (folded into blocks of checks when too wide).
    lines += [fit(Table(["", *(r.check for r in results)], body, across="check"), at,
                  transpose=False), ""]
    for r in results:
        lines += wrap(reason(r), at, f"{r.check}: ", " " * (len(r.check) + 2))
        if debug and r.error_detail:
            lines += ["    " + line for line in r.error_detail.rstrip().splitlines()]
    for name, runs in run.readings.items():
        lines += ["", *_readings_one(report, name, runs, at)]
    lines.append("")
    lines += wrap("times are seconds after the publish began; 'site down' counts 404s only", at)
    return "\n".join(lines)


def _legend(name: str, at: int) -> list[str]:
    keys = READINGS[name]
    lines = wrap(f"{name} under each reading of what is not public:", at)
    for reading in keys:
        lines += wrap(f"{reading.key} ({reading.about}): {' | '.join(reading.values)}", at,
                      "  ", "    ")
    return lines


def _depends(keys: Sequence[str]) -> str:
    return (f"depends on: {', '.join(keys)}" if keys
            else "the same under every reading")


def _readings_one(report: Comparison, name: str, runs: Sequence[ReadingRun], at: int) -> list[str]:
    """One seed: the check's outcome under each combination of its readings."""
    lines = _legend(name, at)
    for run in runs:
        own = " (this run)" if run.own else ""
        lines += wrap(f"{', '.join(run.values)}: {run.verdict or 'none'}, "
                      f"{LOUD.get(run.outcome, run.outcome)}{own}", at, "  ", "    ")
    lines += wrap(_depends(depends_on(name, [(r.values, r.outcome) for r in runs])), at, "  ")
    return lines


def readings_summary(report: Comparison, at: int | None = None) -> list[str]:
    """Many seeds: each check's outcome counts under each combination of its readings."""
    at = width() if at is None else at
    lines: list[str] = []
    for name, per in report.readings.items():
        lines += ["", *_legend(name, at)]
        for values, counts in per.items():
            said = ", ".join(f"{o} {n}" for o, n in counts.nonzero().items())
            lines += wrap(f"{', '.join(values)}: {said}", at, "  ", "    ")
        lines += wrap(_depends(report.depends_on(name)), at, "  ")
    return lines


def summary(report: Comparison, debug: bool = False, at: int | None = None) -> str:
    """Many seeds: outcome counts per check, with mean downtime and decision time.

    With ``debug``, the first traceback of each check that raised follows the table.
    """
    at = width() if at is None else at
    outcomes = list(OUTCOMES)
    first, last = report.seed_range or (0, 0)
    lines = [*wrap(f"{report.scenario} · {report.runs_count} seeds ({first}…{last}) · truth "
                   f"{report.truth_label}", at), "",
             *options(report.setups, at)]
    # Checks are columns, as in the one-run report, at every width: a table too wide
    # folds into blocks of checks rather than turning on its side, so the same command
    # reads the same way in an 80-column terminal and a 200-column one.
    names = list(report.summary)
    body = [[o, *(str(report.summary[n].count(o)) for n in names)] for o in outcomes]
    body.append(["mean down", *(f"{report.stats[n].mean_down_s:.1f} s" for n in names)])
    body.append(["mean decide", *(_s_bare(report.stats[n].mean_decided_s) for n in names)])
    table = Table(["", *names], body, right=frozenset(range(1, len(names) + 1)), across="check")
    lines.append(fit(table, at, transpose=False))
    lines += readings_summary(report, at)
    if debug:
        for name in report.summary:
            stats = report.stats[name]
            if stats.first_error_detail:
                lines.append(f"\n{name} raised on seed {stats.first_error_seed} "
                             f"({counted(stats.errors, 'run')}):")
                lines += ["    " + line for line in stats.first_error_detail.splitlines()]
    return "\n".join(lines)


def expectations(report: Comparison, at: int | None = None) -> str:
    """What the scenario's [expect] declared for the checks that ran, and whether it held."""
    at = width() if at is None else at
    lines: list[str] = []
    if report.expect:
        failed = report.expectations_failed
        if not failed:
            held = ", ".join(f"{k} {v}" for k, v in report.expect.items())
            lines += wrap(f"expectations held: {held}", at)
        else:
            lines.append("expectations FAILED:")
            for f in failed:
                lines += wrap(f"seed {f.seed}: {f.check} expected {f.expected}, got {f.outcome}",
                              at, "  ", "    ")
    if report.expect_not_run:
        lines += wrap(f"not judged (did not run): {', '.join(report.expect_not_run)}", at)
    return "\n".join(lines)


def replayed(path: str, rows: Sequence[ReplayRow], debug: bool = False,
             at: int | None = None) -> str:
    """Replay results: a line per (recorded run, check), each reason wrapped beneath it.

    Where the table does not fit as it is, it is folded and the reasons follow it.
    """
    at = width() if at is None else at
    lines = [*wrap(f"{path}: {counted(len(rows), 'replay')}", at), ""]
    # Each distinct setup once: a recording of many runs usually builds each check alike.
    seen = list({(r.setup.name, options_line(r.setup)): r.setup for r in rows}.values())
    lines += options(seen, at)
    table = Table(
        ["run", "check", "verdict", "decided", "looks"],
        [[row.run or "-", row.check, row.verdict or "none", _s(row.decided_at_s),
          f"{row.looks_used}/{row.looks_recorded}"] for row in rows],
        right=frozenset({3, 4}),
    )
    beneath = fits(table, at)
    drawn = fit(table, at).splitlines()
    lines += drawn[:2] if beneath else [*drawn, ""]
    for i, row in enumerate(rows):
        if beneath:
            lines.append(drawn[2 + i])
            lines += wrap(row.reason, at, "    ")
        else:
            lines += wrap(row.reason, at, f"{row.run or '-'} {row.check}: ", "    ")
        if debug and row.error_detail:
            lines += ["      " + line for line in row.error_detail.rstrip().splitlines()]
    return "\n".join(lines)


def _tally(counts: OutcomeCounts | None) -> str:
    if counts is None:
        return "-"
    ordered = sorted(counts.nonzero().items(), key=lambda kv: (-kv[1], OUTCOMES.index(kv[0])))
    return ", ".join(f"{outcome.replace('_', ' ')} {n}" for outcome, n in ordered)


def checks_table(rules: Mapping[str, str], reports: Sequence[Comparison], runs: int,
                 markdown: bool = False, at: int | None = None) -> str:
    """Each check, the rule it models, its outcomes on each scenario: for a terminal, or Markdown."""
    names = [r.scenario for r in reports]
    outcomes = [[check, *(_tally(r.summary.get(check)) for r in reports)] for check in rules]
    footer = f"Outcomes over {runs} seeds per scenario, from each scenario's own seed."
    if markdown:
        lines = [
            "| check | rule it models | " + " | ".join(f"`{n}`" for n in names) + " |",
            "|---|---|" + "---|" * len(names),
        ]
        for (check, rule), (_, *cells) in zip(rules.items(), outcomes, strict=True):
            lines.append(f"| `{check}` | {rule} | " + " | ".join(cells) + " |")
        return "\n".join([*lines, "", footer])
    at = width() if at is None else at
    return "\n".join([
        fit(Table(["check", "rule it models"], list(map(list, rules.items())),
                  prose=frozenset({1})), at),
        "",
        fit(Table(["check", *names], outcomes, across="scenario"), at),
        "",
        *wrap(footer, at),
    ])


def listing(sections: Mapping[str, Mapping[str, str]], at: int | None = None) -> str:
    """Named things under titles, a line each (descriptions folded to fit): ``testbed list``."""
    at = width() if at is None else at
    lines = []
    # One name width for every section, so their descriptions line up.
    name = max((len(n) for found in sections.values() for n in found), default=0)
    for title, found in sections.items():
        lines += wrap(title, at)
        rows = [["  " + n.ljust(name), text] for n, text in found.items()]
        lines.append(fit(Table(["", ""], rows, prose=frozenset({1}), headed=False), at))
    return "\n".join(lines)


def series_text(result: SeriesResult, checks: Sequence[str], at: int | None = None) -> str:
    """The series as a table (fitted to ``at`` columns): a row per publish, a column per check."""
    at = width() if at is None else at
    truths = sorted({p.scenario.truth for p in result.publishes})
    lines = [f"{result.name} · {counted(len(result.publishes), 'publish', 'publishes')} · "
             f"{'truth' if len(truths) == 1 else 'truths'} {', '.join(truths)}", ""]
    rows = []
    for publish in result.publishes:
        by_check = {r.check: r for r in publish.results}
        cells = []
        for check in checks:
            r = by_check[check]
            # The same form as every other time printed: +150.0 s.
            late = f" late +{r.late_failure_at_s:.1f} s" if r.late_failure_at_s is not None else ""
            cells.append(f"{r.outcome}{late}")
        rows.append([publish.label, *cells])
    lines.append(fit(Table(["publish", *checks], rows, across="check"), at))
    lines.append("")
    for check in checks:
        outcomes = result.outcomes(check)
        live = sum(o in ("missed", "passed") for o in outcomes)
        lines.append(
            f"{check}: {live} of {counted(len(outcomes), 'publish', 'publishes')} marked live, "
            f"{result.late_failures(check)} failed late by the reconciler"
        )
    if result.failed_expectations:
        lines += ["expectations FAILED:", *(f"  {line}" for line in result.failed_expectations)]
    elif result.expect_late_failures:
        held = ", ".join(f"{c} {n}" for c, n in result.expect_late_failures.items())
        lines.append(f"expectations held (late failures): {held}")
    if result.expect_not_run:
        lines.append(f"not judged (did not run): {', '.join(result.expect_not_run)}")
    return "\n".join(line.rstrip() for line in lines)
