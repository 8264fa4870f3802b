"""Human-readable output: checks side by side, and a summary over seeds."""

from __future__ import annotations

import textwrap
from typing import Any

from sim.scenario import OUTCOMES

# Outcomes a person must not miss are shouted.
LOUD = {"missed": "MISSED", "false_alarm": "FALSE ALARM", "error": "ERROR"}


def _s(value: float | None) -> str:
    return "-" if value is None else f"+{value:.1f} s"


def _rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    site = result["site"]
    return [
        ("verdict", result["verdict"] or "none"),
        ("decided at", _s(result["decided_at_s"])),
        ("looks taken", str(len(result["looks"]))),
        ("outcome", LOUD.get(result["outcome"], result["outcome"])),
        ("rollback", result["rollback"] or "-"),
        ("late failure", _s(result["late_failure_at_s"])),
        ("site down (404)", f"{site['down_s']:.1f} s"),
        ("requests", str(site["requests"])),
        ("  served", str(site["served"])),
        ("  404", str(site["not_found"])),
        ("  502", str(site["bad_gateway"])),
    ]


def side_by_side(report: dict[str, Any], run: dict[str, Any]) -> str:
    """One world: a column per check, then each check's reason in full."""
    results = run["results"]
    truth = "bad (its machines crash after the publish)" if run["release_bad"] else "good"
    lines = [f"{report['scenario']} · seed {run['seed']} · the release is {truth}", ""]
    table = [("", [r["check"] for r in results])]
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
            r["reason"] or "", width=96, initial_indent=f"{r['check']}: ",
            subsequent_indent=" " * (len(r["check"]) + 2),
        )
        lines.append(wrapped)
    lines.append("")
    lines.append("times are seconds after the publish began; 'site down' counts 404s only")
    return "\n".join(lines)


def summary(report: dict[str, Any]) -> str:
    """Many seeds: outcome counts per check, with mean downtime and decision time."""
    outcomes = list(OUTCOMES)
    seeds = [run["seed"] for run in report["runs"]]
    lines = [
        f"{report['scenario']} · {len(seeds)} seeds ({seeds[0]}…{seeds[-1]})",
        "",
        f"{'check':<20}" + "".join(f"{o:>12}" for o in outcomes) + f"{'mean down':>12}"
        + f"{'mean decide':>13}",
    ]
    for name, counts in report["summary"].items():
        mine = [r for run in report["runs"] for r in run["results"] if r["check"] == name]
        down = sum(r["site"]["down_s"] for r in mine) / len(mine)
        decided = [r["decided_at_s"] for r in mine if r["decided_at_s"] is not None]
        decide = f"{sum(decided) / len(decided):.1f} s" if decided else "-"
        lines.append(
            f"{name:<20}" + "".join(f"{counts.get(o, 0):>12}" for o in outcomes)
            + f"{down:>10.1f} s" + f"{decide:>13}"
        )
    return "\n".join(lines)


def expectations(report: dict[str, Any]) -> str:
    """What the scenario's [expect] declared, and whether it held."""
    if not report["expect"]:
        return ""
    failed = report["expectations_failed"]
    if not failed:
        held = ", ".join(f"{k} {v}" for k, v in report["expect"].items())
        return f"expectations held: {held}"
    lines = ["expectations FAILED:"]
    lines += [
        f"  seed {f['seed']}: {f['check']} expected {f['expected']}, got {f['outcome']}"
        for f in failed
    ]
    return "\n".join(lines)


def replayed(path: str, rows: list[dict[str, Any]]) -> str:
    """Replay results: a line per (recorded run, check), reasons wrapped beneath."""
    lines = [f"{path}: {len(rows)} replay(s)", ""]
    header = f"{'run':<28}{'check':<20}{'verdict':<9}{'decided':>10}{'looks':>12}"
    lines.append(header)
    for row in rows:
        looks = f"{row['looks_used']}/{row['looks_recorded']}"
        lines.append(
            f"{(row['run'] or '-'):<28}{row['check']:<20}{row['verdict'] or 'none':<9}"
            f"{_s(row['decided_at_s']):>10}{looks:>12}"
        )
        lines.append(textwrap.fill(row["reason"], width=96, initial_indent="    ",
                                   subsequent_indent="    "))
    return "\n".join(lines)


def _tally(counts: dict[str, int]) -> str:
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], OUTCOMES.index(kv[0])))
    return ", ".join(f"{outcome.replace('_', ' ')} {n}" for outcome, n in ordered)


def checks_table(rules: dict[str, str], reports: list[dict[str, Any]], runs: int) -> str:
    """A Markdown table: each check, the rule it models, its outcomes on each scenario."""
    names = [r["scenario"] for r in reports]
    lines = [
        "| check | rule it models | " + " | ".join(f"`{n}`" for n in names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for check, rule in rules.items():
        cells = [_tally(r["summary"].get(check, {})) for r in reports]
        lines.append(f"| `{check}` | {rule} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Outcomes over {runs} seeds per scenario, from each scenario's own seed.")
    return "\n".join(lines)
