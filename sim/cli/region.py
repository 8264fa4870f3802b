"""``testbed region sept25``: the unknowns consistent with what happened on 25 September.

The write-up is evidence too: the count check marked the API's publishes live, and the
timestamp check would have failed them. Each point of the shipped sweep
``scenarios/sweeps/sept25_region.toml`` (restart delay, boot, the event profiles of the
write-up's shape, look delay) gets a **share**: the seeds at which count missed (the bad
release went live) and timestamp caught it, out of the sweep's seeds (20). A point is
**consistent** when the share is every seed: the write-up says all three publishes went
live. Shares below that say how robust a point is (a point at 18 of 20 holds most of the
time, not always).
"""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from platform_testbed.sim.config.scenario import validate
from platform_testbed.sim.config.settings import BadInput, at_most, env_limit
from platform_testbed.sim.config.truth import DEFAULT_TRUTH, DEFAULT_WINDOW_S
from platform_testbed.sim.config.truth import label as label_of
from platform_testbed.sim.config.truth import rule as rule_of
from platform_testbed.sim.publish.compare import SCHEMA_VERSION
from platform_testbed.sim.sweep.file import Sweep, load_sweep
from platform_testbed.sim.sweep.run import run_sweep
from platform_testbed.sim.sweep.units import Row

#: The regions this command knows: name -> the shipped sweep it runs.
REGIONS = {"sept25": "sept25_region"}
#: What each check did on 25 September (the write-up).
HAPPENED = {"count": "missed", "timestamp": "caught"}
#: The one public automatic restart took 2 s from exit to started, at whole-second stamps
#: (tests/data/fly/ateles-watchdog-exit134-restart.txt): between 1 and 3 s.
PUBLIC_EXIT_TO_STARTED_S = (1.0, 3.0)
DELAY, BOOT = "platform.restart_delay_s", "platform.boot_s"
#: The unknown flyctl-smoke's verdict rests on that the region sweeps (the listen reading is
#: the check's own: flyctl-smoke and flyctl-smoke-no-listener side by side).
READING_AXIS = "platform.restart_count_reading"
#: Lines wrap here, the goldens' width (sim.show.table.DEFAULT_WIDTH is 100).
WIDTH = 96


@dataclass(frozen=True, slots=True)
class Region:
    """Each point's share of seeds consistent with what happened, and the shipped point."""

    sweep: Sweep
    seeds: int
    consistent: tuple[tuple[Any, ...], ...]
    shipped: tuple[Any, ...]
    shipped_consistent: bool | None  # None: the shipped point is not on the grid
    interrupted: bool = False
    #: Per point with every seed run: how many seeds held (count missed, timestamp caught).
    held: Mapping[tuple[Any, ...], int] = field(default_factory=dict)
    truth: str = DEFAULT_TRUTH
    truth_window_s: float = DEFAULT_WINDOW_S
    #: The other checks' outcomes (flyctl-smoke's readings), per check and point run whole.
    others: Mapping[str, Mapping[tuple[Any, ...], Mapping[str, int]]] = field(default_factory=dict)

    def others_where_consistent(self, check: str, key: str | None = None,
                                value: Any = None) -> dict[str, int]:
        """``check``'s outcome counts over the consistent points' worlds (where axis ``key``
        is ``value``, if given)."""
        at = None if key is None else self.sweep.keys.index(key)
        total: dict[str, int] = {}
        for point, outcomes in self.others.get(check, {}).items():
            if point in self.consistent and (at is None or point[at] == value):
                for outcome, n in outcomes.items():
                    total[outcome] = total.get(outcome, 0) + n
        return total

    def share(self, point: tuple[Any, ...]) -> float | None:
        """The share of seeds at ``point`` that held; None if the point did not run whole."""
        held = self.held.get(point)
        return None if held is None else held / self.seeds

    def at_least(self, share: float) -> int:
        """How many points held at ``share`` of their seeds or more."""
        return sum(1 for n in self.held.values() if n >= share * self.seeds)

    def counts(self, key: str) -> list[tuple[Any, int, int]]:
        """Per value of axis ``key``: (value, consistent points, points)."""
        at = self.sweep.keys.index(key)
        values = dict(self.sweep.axes)[key]
        per_value = self.sweep.points // len(values)
        return [(v, sum(1 for p in self.consistent if p[at] == v), per_value) for v in values]

    def mean_share(self, key: str, value: Any) -> float | None:
        """The mean share over the points (run whole) where axis ``key`` is ``value``."""
        at = self.sweep.keys.index(key)
        shares = [n / self.seeds for p, n in self.held.items() if p[at] == value]
        return sum(shares) / len(shares) if shares else None

    def within_public_timings(self) -> int:
        """Consistent points whose restart delay + boot lies in the public 1-3 s."""
        low, high = PUBLIC_EXIT_TO_STARTED_S
        d, b = self.sweep.keys.index(DELAY), self.sweep.keys.index(BOOT)
        return sum(1 for p in self.consistent if low <= p[d] + p[b] <= high)

    def to_json(self) -> dict[str, Any]:
        """The ``region --json`` document."""
        keys = self.sweep.keys
        ordered = [self.sweep.point(i) for i in range(self.sweep.points)]
        return {
            "schema_version": SCHEMA_VERSION,
            "region": self.sweep.name,
            "truth": self.truth,
            "truth_rule": rule_of(self.truth, self.truth_window_s),
            "rule": {"every_seed": HAPPENED},
            "points": self.sweep.points,
            "seeds": self.seeds,
            "interrupted": self.interrupted,
            "consistent_points": len(self.consistent),
            "at_least_90_percent": self.at_least(0.9),
            "within_public_timings": self.within_public_timings(),
            "by_axis": {k: [{"value": v, "consistent": n, "points": of,
                             "mean_share": _rounded(self.mean_share(k, v))}
                            for v, n, of in self.counts(k)] for k in keys},
            "shipped_point": dict(zip(keys, self.shipped, strict=True))
            | {"consistent": self.shipped_consistent,
               "share": _rounded(self.share(self.shipped))},
            "consistent": [dict(zip(keys, p, strict=True)) for p in self.consistent],
            "others_where_consistent": {c: self.others_where_consistent(c) for c in self.others},
            "shares": [dict(zip(keys, p, strict=True)) | {"held": self.held[p],
                                                         "share": _rounded(self.share(p))}
                       for p in ordered if p in self.held],
        }


def _rounded(share: float | None) -> float | None:
    return None if share is None else round(share, 4)


def find_region(sweep: Sweep, rows: Sequence[Row], interrupted: bool = False) -> Region:
    """Fold a sweep's rows into each point's share consistent with ``HAPPENED`` (pure)."""
    keys = sweep.keys
    seen: dict[tuple[Any, ...], set[int]] = {}
    broken: dict[tuple[Any, ...], set[int]] = {}
    others: dict[str, dict[tuple[Any, ...], dict[str, int]]] = {}
    for row in rows:
        point = tuple(row[k] for k in keys)
        seen.setdefault(point, set()).add(row["seed"])
        check, outcome = row["check"], row["outcome"]
        if check not in HAPPENED:
            tally = others.setdefault(check, {}).setdefault(point, {})
            tally[outcome] = tally.get(outcome, 0) + 1
        elif outcome != HAPPENED[check]:
            broken.setdefault(point, set()).add(row["seed"])
    # A point counts only with every seed run (an interrupted sweep leaves some short).
    whole = {p for p, seeds in seen.items() if len(seeds) == len(sweep.seeds)}
    ordered = [sweep.point(i) for i in range(sweep.points)]
    held = {p: len(sweep.seeds) - len(broken.get(p, ())) for p in ordered if p in whole}
    consistent = tuple(p for p in ordered if held.get(p) == len(sweep.seeds))
    base = validate(sweep.base, sweep.scenario_name)
    shipped = tuple(getattr(getattr(base, k.split(".")[0]), k.split(".")[1]) for k in keys)
    on_grid = shipped in set(ordered) and shipped in whole
    return Region(sweep, len(sweep.seeds), consistent, shipped,
                  (shipped in consistent) if on_grid else None, interrupted, held,
                  base.truth, base.truth_window_s,
                  {c: {p: dict(t) for p, t in per.items() if p in whole} for c, per in others.items()})


def _wrap(line: str) -> list[str]:
    # Profile names hold hyphens: never split one across lines.
    return textwrap.wrap(line, WIDTH, subsequent_indent="    ", break_on_hyphens=False)


def _value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


def region_text(region: Region) -> str:
    """The region as a few readable lines and one line per unknown."""
    sweep = region.sweep
    seeds = region.seeds
    lines = [
        f"{sweep.name} · {sweep.points:,} points x {seeds} seeds = {sweep.units:,} worlds"
        + (" (interrupted: points not run are not counted)" if region.interrupted else ""),
        *_wrap(f"truth {label_of(region.truth, region.truth_window_s)}"),
        *_wrap("a point's share: the seeds at which count marked the publish live and "
               "timestamp failed it, as on 25 September"),
        f"consistent points (every seed): {len(region.consistent):,} of {sweep.points:,}; "
        f"at 90% of seeds or more: {region.at_least(0.9):,}",
        "",
    ]
    lines.append("per value of each unknown: consistent points / points (mean share):")
    for key in sweep.keys:
        cells = [f"{_value(v)} {n}/{of} ({_pct(region.mean_share(key, v))})"
                 for v, n, of in region.counts(key)]
        lines += _wrap(f"{key}: " + ",  ".join(cells))
    low, high = PUBLIC_EXIT_TO_STARTED_S
    tail = [
        f"consistent points with restart delay + boot between {low:g} and {high:g} s (the public "
        f"automatic restart, ateles): {region.within_public_timings():,}",
    ]
    if region.consistent:
        d, b = sweep.keys.index(DELAY), sweep.keys.index(BOOT)
        totals = sorted({round(p[d] + p[b], 6) for p in region.consistent})
        tail.append("restart delay + boot of the consistent points: "
                    + ", ".join(f"{t:g}" for t in totals) + " s")
    shipped = ", ".join(f"{k}={_value(v)}" for k, v in zip(sweep.keys, region.shipped, strict=True))
    verdict = {True: "consistent", False: "NOT consistent",
               None: "not on the grid"}[region.shipped_consistent]
    held = region.held.get(region.shipped)
    share = "" if held is None else f"{held} of {seeds} seeds ({_pct(region.share(region.shipped))}), "
    tail.append(f"the shipped point ({shipped}): {share}{verdict}")
    lines.append("")
    for line in tail:
        lines += _wrap(line)
    lines += _others_text(region)
    return "\n".join(lines)


def _others_text(region: Region) -> list[str]:
    """What each other check (flyctl-smoke under its readings) did in the consistent worlds."""
    if not region.others:
        return []
    keys = [k for k in region.sweep.keys if k == READING_AXIS]
    lines = ["", *_wrap("the other checks in the consistent points' worlds (what Fly's own deploy "
                        "would have done on 25 September), per reading:")]
    for check in region.others:
        per = ([(f"{keys[0]}={_value(v)}", region.others_where_consistent(check, keys[0], v))
                for v in dict(region.sweep.axes)[keys[0]]] if keys
               else [("", region.others_where_consistent(check))])
        for said, counts in per:
            worlds = sum(counts.values())
            text = ", ".join(f"{o} {n}" for o, n in sorted(counts.items())) or "no worlds"
            lines += _wrap(f"  {check}{', ' + said if said else ''}: {text}"
                           + (f" of {worlds:,} worlds" if worlds else ""))
    return lines


def cmd_region(args: argparse.Namespace) -> int:
    """Run the region's sweep with a progress bar on stderr; print the region."""
    from platform_testbed.sim.cli.sweep import MAX_WORKERS, WORKERS_ENV, sweep_progress  # noqa: PLC0415

    if args.workers is not None:
        at_most("--workers", args.workers, env_limit(WORKERS_ENV, MAX_WORKERS), WORKERS_ENV)
    if args.name not in REGIONS:
        raise BadInput(f"region: unknown region {args.name!r} (known: {', '.join(REGIONS)})")
    sweep = load_sweep(REGIONS[args.name])
    errors = Console(stderr=True)
    progress = sweep_progress(sweep.name, errors, args.no_progress or not errors.is_terminal)
    with progress:
        task = progress.add_task("region", total=sweep.units)
        result = run_sweep(sweep, workers=args.workers,
                           progress=lambda units: progress.advance(task, units))
    region = find_region(sweep, result.rows, result.interrupted)
    if args.json:
        print(json.dumps(region.to_json(), separators=(",", ":")))
    else:
        print(region_text(region))
    return 130 if result.interrupted else 0
