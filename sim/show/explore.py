"""Helpers the notebooks compose: traced runs, the looks a layered check compared, small grids."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from platform_testbed.checks import Check, Event
from platform_testbed.checks.model import to_ms, to_s
from platform_testbed.sim.checkload.loader import load_checks
from platform_testbed.sim.config.scenario import Scenario, apply_sets, validate
from platform_testbed.sim.publish.world import RecordedLook, RunResult, ground_truth, run


def traced_runs(
    scenario: Scenario, checks: Sequence[str] = (), seed: int | None = None
) -> list[RunResult]:
    """Each named check (default: every built-in) in the same world, traced for timelines."""
    built = load_checks(list(checks), scenario.check.model_dump())
    world_seed = scenario.seed if seed is None else seed
    bad = ground_truth(scenario, world_seed)
    return [run(scenario, world_seed, check, bad=bad, trace=True) for check in built]


def layered_looks(result: RunResult) -> dict[int, RecordedLook]:
    """The looks a layered check numbers 1, 2 and 3: from the first at which all read started.

    Looks taken before that are polls while the machines boot.
    """
    first = next(
        (
            i
            for i, recorded in enumerate(result.looks)
            if all(m.state == "started" for m in recorded.look.machines)
        ),
        None,
    )
    if first is None:
        return {}
    return dict(enumerate(result.looks[first : first + 3], start=1))


def describe_event(event: Event, publish_started_ms: int) -> str:
    """One event as a short cell: what happened and when, in seconds after the publish."""
    at = f"{to_s(event.timestamp - publish_started_ms):+.1f} s"
    if event.type != "exit":
        return f"{event.type} {at}"
    if event.requested_stop:
        cause = "requested stop"
    elif event.oom_killed:
        cause = "OOM kill"
    elif event.is_crash:
        cause = f"crash (code {event.exit_code})"
    else:
        cause = "clean exit"
    return f"exit: {cause} {at}"


def event_lists(
    result: RunResult, numbers: Sequence[int] = (2, 3), machine: int = 0
) -> list[list[str]]:
    """One machine's event list at the given layered looks, side by side, newest first.

    The first row names the looks; each further row is one position of the capped list;
    the last rows are what each layer-3 variant compares: the crash count and the newest crash.
    """
    publish_ms = _publish_ms(result)
    looks = layered_looks(result)
    chosen = [looks[n] for n in numbers if n in looks]
    header = [""] + [
        f"look {n} ({to_s(looks[n].look.at_ms - publish_ms):+.1f} s)"
        for n in numbers
        if n in looks
    ]
    snapshots = [recorded.look.machines[machine] for recorded in chosen]
    depth = max((len(s.events) for s in snapshots), default=0)
    rows = [header]
    for position in range(depth):
        label = "newest" if position == 0 else f"#{position + 1}"
        rows.append(
            [label]
            + [
                describe_event(s.events[position], publish_ms) if position < len(s.events) else ""
                for s in snapshots
            ]
        )
    rows.append(["dropped so far"] + [str(r.dropped[machine]) for r in chosen])
    crashes = [list(s.crashes_since(publish_ms)) for s in snapshots]
    rows.append(["crashes since publish (count)"] + [str(len(c)) for c in crashes])
    rows.append(
        ["newest crash (timestamp)"]
        + [f"{to_s(c[0].timestamp - publish_ms):+.1f} s" if c else "none" for c in crashes]
    )
    return rows


def markdown_table(rows: Sequence[Sequence[str]]) -> str:
    """Rows (the first is the header) as a Markdown table, for ``IPython.display.Markdown``."""
    header, *body = rows
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


@dataclass(frozen=True)
class DetectionGrid:
    """Outcomes of each check over event-log caps by crash periods, one world per cell."""

    scenario: str
    seed: int
    caps: tuple[int, ...]
    periods: tuple[float, ...]
    #: check name -> [period index][cap index] -> outcome (caught, missed, …)
    outcomes: dict[str, tuple[tuple[str, ...], ...]]
    #: the same cells: the layer that decided ("" when no verdict)
    layers: dict[str, tuple[tuple[str, ...], ...]]

    def outcome(self, check: str, period: float, cap: int) -> str:
        """The outcome of one check in the world with this crash period and cap."""
        return self.outcomes[check][self.periods.index(period)][self.caps.index(cap)]

    def smallest_cap_that_catches(self, check: str) -> dict[float, int | None]:
        """Per crash period: the smallest cap from which the check catches at every larger cap.

        Below it the check is blind; None when it misses even at the largest cap tried.
        """
        found: dict[float, int | None] = {}
        for period, row in zip(self.periods, self.outcomes[check], strict=True):
            smallest = None
            for cap, outcome in reversed(list(zip(self.caps, row, strict=True))):
                if outcome != "caught":
                    break
                smallest = cap
            found[period] = smallest
        return found


def with_sets(scenario: Scenario, sets: Sequence[str]) -> Scenario:
    """A copy of ``scenario`` with ``--set``-style overrides, validated like the CLI's."""
    return validate(apply_sets(scenario.model_dump(), list(sets)), scenario.name)


def detection_grid(
    scenario: Scenario,
    caps: Sequence[int],
    periods: Sequence[float],
    checks: Sequence[str] = (),
    seed: int | None = None,
) -> DetectionGrid:
    """Run every check in the scenario's world for each event-log cap and crash period.

    The crash period sets ``release.crash_after_s`` (the app crashes that long after each
    start); everything else is the scenario's.
    """
    world_seed = scenario.seed if seed is None else seed
    built: list[Check] = load_checks(list(checks), scenario.check.model_dump())
    names = [getattr(c, "name", type(c).__name__) for c in built]
    cells: dict[str, list[list[str]]] = {name: [] for name in names}
    layers: dict[str, list[list[str]]] = {name: [] for name in names}
    for period in periods:
        for name in names:
            cells[name].append([])
            layers[name].append([])
        for cap in caps:
            world = with_sets(
                scenario, [f"platform.event_log_cap={cap}", f"release.crash_after_s={period}"]
            )
            bad = ground_truth(world, world_seed)
            for name, check in zip(names, built, strict=True):
                result = run(world, world_seed, check, bad=bad)
                cells[name][-1].append(result.outcome)
                layers[name][-1].append(result.verdict.layer if result.verdict else "")
    return DetectionGrid(
        scenario=scenario.name,
        seed=world_seed,
        caps=tuple(caps),
        periods=tuple(float(p) for p in periods),
        outcomes={name: tuple(tuple(row) for row in rows) for name, rows in cells.items()},
        layers={name: tuple(tuple(row) for row in rows) for name, rows in layers.items()},
    )


def _publish_ms(result: RunResult) -> int:
    if result.trace is None:
        raise ValueError("the run has no trace: call sim.publish.world.run(..., trace=True)")
    return result.trace.epoch_ms + to_ms(result.trace.publish_at_s)
