"""Run several checks in the same worlds and gather their results as frozen typed values.

``Comparison.to_json()`` gives the ``--json`` document (``SCHEMA_VERSION`` on top); the
text reports (``sim.show.report``) are rendered from the same values.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import operator
from array import array
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from platform_testbed.checks import Check, Event
from platform_testbed.checks.drive import check_name
from platform_testbed.sim.checkload.budget import DEFAULT_CHECK_BUDGET, CheckBudget
from platform_testbed.sim.checkload.loader import CheckSetup
from platform_testbed.sim.config.scenario import OUTCOMES, Outcome, Scenario
from platform_testbed.sim.config.truth import DEFAULT_TRUTH, DEFAULT_WINDOW_S
from platform_testbed.sim.config.truth import label as label_of
from platform_testbed.sim.config.truth import rule as rule_of
from platform_testbed.sim.publish.sharing import run_checks
from platform_testbed.sim.publish.world import RecordedLook, RunResult, ground_truth
from platform_testbed.sim.publish.world import run as run_one
from platform_testbed.sim.runtime.frames import BOOL, FLOAT, INT, OUTCOME, TEXT, frame

if TYPE_CHECKING:
    import pandas as pd

#: The version of every ``--json`` document of compare, checks and replay: bumped when a
#: field changes meaning or goes away (adding a field does not bump it).
SCHEMA_VERSION = 1

#: One check's result in one world as a flat row (``result_row``), each column with its
#: DataFrame dtype: a sweep's rows and ``Comparison.to_pandas()`` share these columns.
RESULT_DTYPES: Mapping[str, str] = MappingProxyType({
    "check": TEXT, "verdict": TEXT, "outcome": OUTCOME, "release_bad": BOOL,
    "decided_at_s": FLOAT, "rollback": TEXT, "late_failure_at_s": FLOAT, "down_s": FLOAT,
    "requests": INT, "served": INT, "not_found": INT, "bad_gateway": INT, "error": TEXT,
})
RESULT_COLUMNS = tuple(RESULT_DTYPES)
#: ``Comparison.to_pandas(per="check")``: one row per check, every outcome's count.
CHECK_DTYPES: Mapping[str, str] = MappingProxyType({
    "check": TEXT, "runs": INT, **dict.fromkeys(OUTCOMES, INT), "mean_down_s": FLOAT,
    "mean_decided_s": FLOAT,
})


class RunStep(Protocol):
    """A row that is not a ``Check`` (a real process against the twin: ``sim.twin.step``)."""

    name: str

    def __call__(self, scenario: Scenario, seed: int, bad: bool) -> RunResult: ...


#: Each outcome's place among ``OutcomeCounts``' fields (``OUTCOMES`` order).
_OUTCOME_AT = {outcome: i for i, outcome in enumerate(OUTCOMES)}
_OUTCOME_OF = cast("tuple[Outcome, ...]", OUTCOMES)


@dataclass(frozen=True, slots=True)
class OutcomeCounts:
    """How many runs ended in each outcome; zero counts are kept, in ``OUTCOMES`` order."""

    caught: int = 0
    missed: int = 0
    passed: int = 0
    false_alarm: int = 0
    blind: int = 0
    undecided: int = 0
    error: int = 0

    def count(self, outcome: str) -> int:
        """The count of one outcome."""
        value: int = getattr(self, outcome)
        return value

    def plus(self, outcome: Outcome) -> OutcomeCounts:
        """These counts with one more run of ``outcome``."""
        # Positional, not dataclasses.replace: compare folds every run of every check here.
        counts = [self.caught, self.missed, self.passed, self.false_alarm, self.blind,
                  self.undecided, self.error]
        counts[_OUTCOME_AT[outcome]] += 1
        return OutcomeCounts(*counts)

    def folded(self, outcomes: bytes) -> OutcomeCounts:
        """These counts with one more run of each outcome coded in ``outcomes`` (``SeedTally``)."""
        counts = [self.caught, self.missed, self.passed, self.false_alarm, self.blind,
                  self.undecided, self.error]
        return OutcomeCounts(*(n + outcomes.count(i) for i, n in enumerate(counts)))

    @property
    def total(self) -> int:
        """Every run counted."""
        return sum(self.count(o) for o in OUTCOMES)

    def nonzero(self) -> dict[str, int]:
        """The outcomes that happened, with their counts."""
        return {o: self.count(o) for o in OUTCOMES if self.count(o)}

    def to_json(self) -> dict[str, int]:
        """Every outcome with its count, zeros included."""
        return {o: self.count(o) for o in OUTCOMES}


@dataclass(frozen=True, slots=True)
class CheckStats:
    """A running tally of one check over many runs: what the summary needs, in O(1) memory."""

    runs: int = 0
    down_s: float = 0.0
    decided: int = 0
    decided_s: float = 0.0
    errors: int = 0
    #: The first run that raised: its seed and traceback (``--debug`` shows it).
    first_error_seed: int | None = None
    first_error_detail: str | None = None

    def plus(self, result: RunResult) -> CheckStats:
        """These stats with one more run."""
        first = self.first_error_seed is None and bool(result.error_detail)
        return CheckStats(
            runs=self.runs + 1,
            down_s=self.down_s + result.site.down_s,
            decided=self.decided + (result.decided_at_s is not None),
            decided_s=self.decided_s + (result.decided_at_s or 0.0),
            errors=self.errors + bool(result.error_detail),
            first_error_seed=result.seed if first else self.first_error_seed,
            first_error_detail=result.error_detail if first else self.first_error_detail,
        )

    def folded(self, tally: CheckTally, runs: int) -> CheckStats:
        """These stats with ``runs`` more, tallied where they ran: the same sums, bit for bit,
        as ``plus`` on each (``reduce`` adds left to right, as ``plus`` does; not ``sum``,
        which compensates its rounding on Python 3.12+)."""
        first = tally.first_error if self.first_error_seed is None else None
        return CheckStats(
            runs=self.runs + runs,
            down_s=functools.reduce(operator.add, tally.down_s, self.down_s),
            decided=self.decided + len(tally.decided_s),
            decided_s=functools.reduce(operator.add, tally.decided_s, self.decided_s),
            errors=self.errors + tally.errors,
            first_error_seed=self.first_error_seed if first is None else first[0],
            first_error_detail=self.first_error_detail if first is None else first[1],
        )

    @property
    def mean_down_s(self) -> float:
        """Mean seconds the site served 404s, over every run."""
        return self.down_s / self.runs if self.runs else 0.0

    @property
    def mean_decided_s(self) -> float | None:
        """Mean decision time over the runs that decided; None if none did."""
        return self.decided_s / self.decided if self.decided else None


@dataclass(frozen=True, slots=True)
class Reading:
    """An unknown that can decide a check's verdict and its plausible values.

    ``key``: a scenario key (``table.key``, as ``--set`` names it), or a check option (no
    dot, as ``--check-opt`` names it).
    """

    key: str
    values: tuple[str, ...]
    #: Why it is unknown, in a phrase (the text report's legend).
    about: str


#: The unknowns that decide verdicts, per check name (docs/fidelity.md): compare runs a
#: check under every combination of its readings and marks a verdict that changes.
READINGS: Mapping[str, tuple[Reading, ...]] = MappingProxyType({
    "flyctl-smoke": (
        Reading("listen_reading", ("ps-fails", "no-listener"),
                "a check option: what flyctl's listen-address wait meets on a machine not "
                "started"),
        Reading("platform.restart_count_reading", ("restarts-so-far", "counts-this-restart"),
                "whether an exit's restart_count counts the restart it triggers"),
    ),
})


@dataclass(frozen=True, slots=True)
class ReadingRun:
    """One check's outcome in one seed's world under one combination of its readings."""

    values: tuple[str, ...]  # in the order of ``READINGS[check]``
    outcome: Outcome
    verdict: str | None
    #: True for the combination the run itself used (the scenario's and the check's values).
    own: bool


@dataclass(frozen=True, slots=True)
class SeedRun:
    """Every check's result in one seed's world."""

    seed: int
    release_bad: bool
    results: tuple[RunResult, ...]
    #: Per check that has readings (``READINGS``): its outcome under each combination.
    readings: Mapping[str, tuple[ReadingRun, ...]] = dataclasses.field(
        default_factory=lambda: MappingProxyType({}))

    def depends_on(self, check: str) -> tuple[str, ...]:
        """The readings whose value alone changes ``check``'s outcome in this world."""
        return depends_on(check, [(r.values, r.outcome) for r in self.readings.get(check, ())])


def depends_on(check: str, results: Iterable[tuple[tuple[str, ...], Hashable]]) -> tuple[str, ...]:
    """The readings of ``check`` that change its result between two combinations that differ
    in that reading alone (``results``: each combination's values and its result)."""
    found = []
    pairs = list(results)
    for at, reading in enumerate(READINGS.get(check, ())):
        by_rest: dict[tuple[str, ...], set[Hashable]] = {}
        for values, result in pairs:
            by_rest.setdefault(values[:at] + values[at + 1:], set()).add(result)
        if any(len(seen) > 1 for seen in by_rest.values()):
            found.append(reading.key)
    return tuple(found)


def _own_value(scenario: Scenario, check: Check, key: str) -> str:
    """The value of reading ``key`` the run used: the check's option, or the scenario's."""
    if "." not in key:
        return str(getattr(check, key))
    table, name = key.split(".", 1)
    return str(getattr(getattr(scenario, table), name))


def _with_reading(scenario: Scenario, check: Check, key: str, value: str) -> tuple[Scenario, Check]:
    """The scenario and check with reading ``key`` set to ``value``."""
    if "." not in key:
        assert dataclasses.is_dataclass(check)  # a built-in of READINGS: a frozen dataclass
        return scenario, cast("Check", dataclasses.replace(check, **{key: value}))
    table, name = key.split(".", 1)
    section = getattr(scenario, table)
    return scenario.model_copy(update={table: section.model_copy(update={name: value})}), check


def reading_runs(scenario: Scenario, seed: int, check: Check, own: RunResult | Outcome,
                 budget: CheckBudget = DEFAULT_CHECK_BUDGET) -> tuple[ReadingRun, ...]:
    """``check`` in ``seed``'s world under every combination of its readings.

    ``own`` is the run's own result (its ground truth is reused: no reading changes it), or
    only its outcome (a pool's tally: each other combination finds the same truth itself).
    """
    readings = READINGS.get(check_name(check), ())
    if not readings or any("." not in r.key and not hasattr(check, r.key) for r in readings):
        return ()  # none, or a check of that name without the options (a user's)
    mine = tuple(_own_value(scenario, check, r.key) for r in readings)
    bad = own.bad if isinstance(own, RunResult) else None
    runs = []
    for values in itertools.product(*(r.values for r in readings)):
        if values == mine:
            if isinstance(own, RunResult):
                runs.append(ReadingRun(values, own.outcome, verdict_word(own), True))
            else:
                runs.append(ReadingRun(values, own, None, True))
            continue
        world, variant = scenario, check
        for reading, value in zip(readings, values, strict=True):
            world, variant = _with_reading(world, variant, reading.key, value)
        result = run_one(world, seed, variant, bad=bad, budget=budget)
        runs.append(ReadingRun(values, result.outcome, verdict_word(result), False))
    return tuple(runs)


#: A summary (runs not kept) carries the readings' counts up to this many seeds: each seed
#: runs the check three more times, in this process, whether the seeds ran here or on a pool.
READINGS_MAX_SEEDS = 1_000


@dataclass(frozen=True, slots=True)
class ExpectationMiss:
    """A scenario's ``[expect]`` for a check that did not hold on one seed."""

    seed: int
    check: str
    expected: Outcome
    outcome: Outcome

    def to_json(self) -> dict[str, Any]:
        """``{"seed", "check", "expected", "outcome"}``."""
        return {"seed": self.seed, "check": self.check, "expected": self.expected,
                "outcome": self.outcome}


@dataclass(frozen=True, slots=True)
class Comparison:
    """Several checks over the same seeds' worlds of one scenario."""

    scenario: str
    description: str
    publish_started_ms: int
    checks: tuple[str, ...]
    seeds: tuple[SeedRun, ...]
    summary: Mapping[str, OutcomeCounts]
    #: The scenario's ``[expect]`` for the checks that ran (only those are judged).
    expect: Mapping[str, Outcome]
    #: Checks the scenario expects something of, but which did not run.
    expect_not_run: tuple[str, ...]
    expectations_failed: tuple[ExpectationMiss, ...]
    #: How each check was built (options and their sources), when the caller says.
    setups: tuple[CheckSetup, ...] = ()
    #: Per check, the running tally the summary is drawn from (kept whatever ``seeds`` keeps).
    stats: Mapping[str, CheckStats] = dataclasses.field(
        default_factory=lambda: MappingProxyType({}))
    #: Every seed run, first and last (``seeds`` may hold none of them: ``keep_runs``).
    seed_range: tuple[int, int] | None = None
    runs_count: int = 0
    #: The ground truth that judged every run, and its window (``sim.config.truth``).
    truth: str = DEFAULT_TRUTH
    truth_window_s: float = DEFAULT_WINDOW_S
    #: Per check with readings (``READINGS``), per combination of them: the outcome counts
    #: over the seeds run here (a runner's summary-only seeds are not in it).
    readings: Mapping[str, Mapping[tuple[str, ...], OutcomeCounts]] = dataclasses.field(
        default_factory=lambda: MappingProxyType({}))

    def depends_on(self, check: str) -> tuple[str, ...]:
        """The readings whose value alone changes ``check``'s outcome counts."""
        return depends_on(check, self.readings.get(check, {}).items())

    @property
    def truth_rule(self) -> str:
        """The truth's rule in one phrase."""
        return rule_of(self.truth, self.truth_window_s)

    @property
    def truth_label(self) -> str:
        """The truth's name and rule: ``serves (bad if ...)``."""
        return label_of(self.truth, self.truth_window_s)

    def results_of(self, check: str) -> tuple[RunResult, ...]:
        """One check's results, a seed after another."""
        return tuple(r for run in self.seeds for r in run.results if r.check == check)

    def to_pandas(self, per: Literal["run", "check"] = "run") -> pd.DataFrame:
        """The results as a pandas DataFrame (needs the ``pandas`` extra).

        ``per="run"``: one row per seed and check, ``seed`` then ``RESULT_COLUMNS`` then the
        verdict's ``reason``; only the runs ``seeds`` kept. ``per="check"``: one row per
        check, its count of every outcome (zeros too), ``runs``, ``mean_down_s`` and
        ``mean_decided_s``, from the summary, so it covers every run, kept or not.
        """
        if per == "check":
            return frame([self._check_row(name) for name in self.checks], CHECK_DTYPES)
        if per != "run":
            raise ValueError(f"per: 'run' or 'check' (got {per!r})")
        if len(self.seeds) < self.runs_count:
            raise ValueError(f"per='run': only {len(self.seeds)} of {self.runs_count} runs were "
                             "kept (keep_runs=False); per='check' covers them all")
        return frame([{"seed": run.seed} | result_row(r) | {"reason": reason(r)}
                      for run in self.seeds for r in run.results],
                     {**RESULT_DTYPES, "reason": TEXT}, ("seed", *RESULT_COLUMNS, "reason"))

    def _check_row(self, name: str) -> dict[str, Any]:
        stats = self.stats.get(name)
        return ({"check": name, "runs": self.summary[name].total} | self.summary[name].to_json()
                | {"mean_down_s": None if stats is None else stats.mean_down_s,
                   "mean_decided_s": None if stats is None else stats.mean_decided_s})

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document (README "Using it")."""
        doc: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "scenario": self.scenario,
            "description": self.description,
            "truth": self.truth,
            "truth_rule": self.truth_rule,
            "runs": [run_json(run, self.publish_started_ms) for run in self.seeds],
            "runs_count": self.runs_count,
            "summary": {name: counts.to_json() for name, counts in self.summary.items()},
            "expect": dict(self.expect),
            "expect_not_run": list(self.expect_not_run),
            "expectations_failed": [miss.to_json() for miss in self.expectations_failed],
        }
        if self.setups:
            doc["check_options"] = {s.name: s.to_json() for s in self.setups}
        if self.readings:
            doc["readings"] = {
                name: {"keys": [r.key for r in READINGS[name]],
                       "depends_on": list(self.depends_on(name)),
                       "counts": [{"readings": dict(zip([r.key for r in READINGS[name]], values,
                                                        strict=True)),
                                   "summary": counts.to_json()}
                                  for values, counts in per.items()]}
                for name, per in self.readings.items()}
        if len(self.seeds) < self.runs_count:
            # Per-run details of many runs are streamed (--details FILE.jsonl), not held.
            del doc["runs"]
        return doc


def run_json(run: SeedRun, publish_started_ms: int) -> dict[str, Any]:
    """One seed's world: every check's result (a ``--json`` run, a ``--details`` line)."""
    doc: dict[str, Any] = {
        "seed": run.seed,
        "release_bad": run.release_bad,
        "results": [result_json(r, publish_started_ms) for r in run.results],
    }
    if run.readings:
        doc["readings"] = {check: readings_json(check, runs) for check, runs in run.readings.items()}
    return doc


def readings_json(check: str, runs: Sequence[ReadingRun]) -> dict[str, Any]:
    """One check's outcome under each reading, and the readings its verdict depends on."""
    keys = [r.key for r in READINGS[check]]
    return {
        "depends_on": list(depends_on(check, [(r.values, r.outcome) for r in runs])),
        "outcomes": [{"readings": dict(zip(keys, run.values, strict=True)), "outcome": run.outcome,
                      "verdict": run.verdict, "own": run.own} for run in runs],
    }


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
    """A look as compact JSON: times in seconds after the publish began; ``pre_deploy``
    (each machine's state before the publish) when the look carried it, as a check saw it."""
    look = recorded.look
    data: dict[str, Any] = {
        "at_s": (look.at_ms - publish_started_ms) / 1000,
        "machines": [
            {
                "id": m.id,
                "state": m.state,
                "image": m.image,
                "dropped": dropped,
                "events": [_event_json(e, publish_started_ms) for e in m.events],
            }
            for m, dropped in zip(look.machines, recorded.dropped, strict=True)
        ],
    }
    if look.pre_deploy is not None:
        data["pre_deploy"] = dict(look.pre_deploy)
    return data


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def verdict_word(result: RunResult) -> str | None:
    """``pass``, ``fail``, or None when the check gave no verdict."""
    verdict = result.verdict
    return None if verdict is None else ("pass" if verdict.ok else "fail")


def reason(result: RunResult) -> str:
    """The verdict's reason, or the error that stood in for a verdict."""
    return (result.error or "") if result.verdict is None else result.verdict.reason


def result_row(result: RunResult) -> dict[str, Any]:
    """One check's result in one world as a flat row with ``RESULT_COLUMNS`` (sweep rows, tables)."""
    site = result.site
    return {
        "check": result.check,
        "verdict": verdict_word(result),
        "outcome": result.outcome,
        "release_bad": result.bad,
        "decided_at_s": _round(result.decided_at_s),
        "rollback": result.rollback,
        "late_failure_at_s": _round(result.late_failure_at_s),
        "down_s": site.down_s,
        "requests": site.requests,
        "served": site.served,
        "not_found": site.not_found,
        "bad_gateway": site.bad_gateway,
        "error": result.error,
    }


def result_json(result: RunResult, publish_started_ms: int) -> dict[str, Any]:
    """One check's result in one world, in the shape the CLI contract gives."""
    verdict = result.verdict
    return {
        "check": result.check,
        "verdict": verdict_word(result),
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


@dataclass(frozen=True, slots=True)
class CheckTally:
    """One check over a task's seeds: what its summary needs of them, in seed order."""

    #: Each seed's outcome, one byte each: its place in ``OUTCOMES``.
    outcomes: bytes
    #: Each seed's ``site.down_s``.
    down_s: array[float]
    #: ``decided_at_s`` of the seeds whose check decided, only those (adding the others'
    #: 0.0 changes no bit of a sum that starts at 0.0).
    decided_s: array[float]
    #: How many seeds' runs raised (``error_detail``), and the first of them.
    errors: int
    first_error: tuple[int, str] | None


@dataclass(frozen=True, slots=True)
class SeedTally:
    """A task's seeds folded where they ran, for a summary: no ``RunResult`` travels back.

    ``compare`` folds tallies in seed order with C loops (``bytes.count``, a left-to-right
    ``reduce`` of float adds, the very adds ``CheckStats.plus`` makes one by one), so the
    summary, the stats and the expectations failed are the ones the results give.
    """

    #: The task's seeds, in order (a ``range`` stays one: it pickles small).
    seeds: Sequence[int]
    names: tuple[str, ...]
    #: Each check's tally, in the order of ``names``.
    checks: tuple[CheckTally, ...]

    @classmethod
    def of(cls, seeds: Sequence[int], runs: Iterable[Sequence[RunResult]]) -> SeedTally:
        """The tally of ``seeds``, given each seed's results (the checks in one order) in turn."""
        names: tuple[str, ...] = ()
        outcomes: list[bytearray] = []
        downs: list[array[float]] = []
        decideds: list[array[float]] = []
        errors: list[int] = []
        firsts: list[tuple[int, str] | None] = []
        for taken, (seed, results) in enumerate(zip(seeds, runs, strict=True)):
            if not taken:  # the first seed's results name the checks
                names = tuple(r.check for r in results)
                n = len(names)
                outcomes, errors, firsts = [bytearray() for _ in names], [0] * n, [None] * n
                downs, decideds = [array("d") for _ in names], [array("d") for _ in names]
            for i, result in enumerate(results):
                outcomes[i].append(_OUTCOME_AT[result.outcome])
                downs[i].append(result.site.down_s)
                if result.decided_at_s is not None:
                    decideds[i].append(result.decided_at_s)
                if result.error_detail:
                    errors[i] += 1
                    if firsts[i] is None:
                        firsts[i] = (seed, result.error_detail)
        return cls(seeds, names, tuple(
            CheckTally(bytes(o), d, s, e, f)
            for o, d, s, e, f in zip(outcomes, downs, decideds, errors, firsts, strict=True)))

    def __len__(self) -> int:
        """How many seeds it holds (a pool counts a batch by its length)."""
        return len(self.seeds)


#: What a ``Runner``'s tasks send back: each seed's results with their looks ("looks"), the
#: results without them ("results"), or only a ``SeedTally`` of the task's seeds ("tally").
Want = Literal["looks", "results", "tally"]
#: One task's seeds as a runner hands them on: ``(seed, results)`` in seed order, or a ``SeedTally``.
Batch = SeedTally | Sequence[tuple[int, Sequence[RunResult]]]
#: Runs every check in the given seeds' worlds elsewhere (``compare``'s ``runner``;
#: ``sim.sweep.seeds`` runs them on a pool) as ``want`` says, and hands each task's batch to
#: the callback, in seed order: ``runner(seeds, want, fold)``.
Runner = Callable[[Sequence[int], Want, Callable[[Batch], None]], None]


def _fold(batch: SeedTally, counts: dict[str, OutcomeCounts], stats: dict[str, CheckStats],
          expect: Mapping[str, Outcome]) -> list[ExpectationMiss]:
    """Fold a task's tally into ``counts`` and ``stats``; the expectations it failed, in order."""
    misses: list[tuple[int, int, ExpectationMiss]] = []
    for at, (name, tally) in enumerate(zip(batch.names, batch.checks, strict=True)):
        counts[name] = counts[name].folded(tally.outcomes)
        stats[name] = stats[name].folded(tally, len(batch.seeds))
        expected = expect.get(name)
        if expected is not None:
            misses += _misses(batch.seeds, at, name, expected, tally.outcomes)
    # Seed by seed, and within a seed check by check: the order ``take`` finds them in.
    return [miss for _, _, miss in sorted(misses, key=lambda m: m[:2])]


def _misses(seeds: Sequence[int], at: int, name: str, expected: Outcome,
            outcomes: bytes) -> list[tuple[int, int, ExpectationMiss]]:
    """The seeds whose outcome is not ``expected``, keyed by (seed's place, check's place)."""
    code = _OUTCOME_AT[expected]
    if outcomes.count(code) == len(outcomes):  # all held: one C scan
        return []
    return [(i, at, ExpectationMiss(seeds[i], name, expected, _OUTCOME_OF[c]))
            for i, c in enumerate(outcomes) if c != code]


class _ReadingTally:
    """compare's counts of each check's outcomes under each combination of its readings."""

    def __init__(self, scenario: Scenario, checks: Sequence[Check], seeds: Iterable[int],
                 wanted: bool, budget: CheckBudget) -> None:
        self.scenario, self.budget, self.wanted = scenario, budget, wanted
        self.by_name = {check_name(c): c for c in checks if check_name(c) in READINGS}
        # For kept runs, and for a summary of a known number of seeds up to the limit.
        many = len(seeds) if isinstance(seeds, Sized) else READINGS_MAX_SEEDS + 1
        self.summary_too = many <= READINGS_MAX_SEEDS
        self.counts: dict[str, dict[tuple[str, ...], list[Outcome]]] = {}

    def seed(self, seed: int, results: Sequence[RunResult], kept: bool
             ) -> Mapping[str, tuple[ReadingRun, ...]]:
        """One seed's results under each reading (counted), when wanted."""
        if not (self.wanted and (kept or self.summary_too)):
            return MappingProxyType({})
        found = MappingProxyType({
            r.check: reading_runs(self.scenario, seed, self.by_name[r.check], r, self.budget)
            for r in results if r.check in self.by_name})
        self._count(found)
        return found

    def batch(self, batch: SeedTally) -> None:
        """A tally's seeds under each reading, from the outcomes the tally carries."""
        if not (self.wanted and self.summary_too):
            return
        for at, seed in enumerate(batch.seeds):
            self._count({name: reading_runs(self.scenario, seed, self.by_name[name],
                                            _OUTCOME_OF[tally.outcomes[at]], self.budget)
                         for name, tally in zip(batch.names, batch.checks, strict=True)
                         if name in self.by_name})

    def _count(self, readings: Mapping[str, Sequence[ReadingRun]]) -> None:
        for name, variants in readings.items():
            for variant in variants:
                self.counts.setdefault(name, {}).setdefault(variant.values, []).append(
                    variant.outcome)

    def summary(self) -> Mapping[str, Mapping[tuple[str, ...], OutcomeCounts]]:
        """Per check and combination, the outcome counts."""
        return MappingProxyType({
            name: MappingProxyType({values: OutcomeCounts().folded(
                bytes(_OUTCOME_AT[o] for o in outcomes)) for values, outcomes in per.items()})
            for name, per in self.counts.items()})


def compare(
    scenario: Scenario,
    checks: Sequence[Check],
    seeds: Iterable[int],
    on_result: Callable[[RunResult], None] | None = None,
    setups: Sequence[CheckSetup] = (),
    *,
    keep_runs: bool = True,
    on_run: Callable[[SeedRun], None] | None = None,
    budget: CheckBudget = DEFAULT_CHECK_BUDGET,
    steps: Sequence[RunStep] = (),
    runner: Runner | None = None,
    with_readings: bool = True,
) -> Comparison:
    """Every check in every seed's world; the release's badness is judged once per seed.

    ``on_result`` sees each run's full result (e.g. to record its looks) as it finishes;
    ``setups`` (from ``sim.checkload.loader.build_checks``) say which options each check ran with.
    With ``keep_runs=False`` no run is kept (memory flat in the number of seeds): the
    summary comes from running tallies, and ``on_run`` sees each seed's runs as they end.
    ``budget`` is what every check is driven under (``sim.checkload.budget``).
    Each of ``steps`` gives one more row per seed, after the checks', on the same truth.
    ``with_readings``: a check with unknowns that decide its verdict (``READINGS``) is also
    run under every combination of them, in this process, when the runs are kept or the
    seeds are a sized collection of at most ``READINGS_MAX_SEEDS`` (the same counts whether
    they ran here or on a runner); the comparison says what each verdict depends on.
    ``runner`` runs the checks' worlds elsewhere (a pool: ``sim.sweep.seeds``, which hands
    the budget on); the results, or for a summary alone (``keep_runs=False``, no callback,
    no step) each task's ``SeedTally``, are folded here in seed order either way, so the
    comparison is the same.
    """
    names = tuple(check_name(c) for c in checks) + tuple(s.name for s in steps)
    if len(set(names)) != len(names):
        raise ValueError(f"two checks share a name: {', '.join(names)}")
    counts = dict.fromkeys(names, OutcomeCounts())
    stats = dict.fromkeys(names, CheckStats())
    readings_tally = _ReadingTally(scenario, checks, seeds, with_readings, budget)
    runs = []
    failures = []
    first_seed: int | None = None
    last_seed: int | None = None
    total = 0

    def take(seed: int, given: Sequence[RunResult]) -> None:
        nonlocal total, first_seed, last_seed
        total += 1
        first_seed = seed if first_seed is None else first_seed
        last_seed = seed
        results = tuple(given)
        bad = results[0].bad if results else ground_truth(scenario, seed)
        readings = readings_tally.seed(seed, results, keep_runs)
        results += tuple(step(scenario, seed, bad) for step in steps)
        for result in results:
            if on_result is not None:
                on_result(result)
            counts[result.check] = counts[result.check].plus(result.outcome)
            stats[result.check] = stats[result.check].plus(result)
            expected = scenario.expect.get(result.check)
            if expected is not None and expected != result.outcome:
                failures.append(ExpectationMiss(seed, result.check, expected, result.outcome))
        run = SeedRun(seed, bad, results, readings)
        if on_run is not None:
            on_run(run)
        if keep_runs:
            runs.append(run)

    def fold(batch: Batch) -> None:
        nonlocal total, first_seed, last_seed
        if not isinstance(batch, SeedTally):
            for seed, results in batch:
                take(seed, results)
            return
        if not batch.seeds:
            return
        total += len(batch.seeds)
        first_seed = batch.seeds[0] if first_seed is None else first_seed
        last_seed = batch.seeds[-1]
        failures.extend(_fold(batch, counts, stats, scenario.expect))
        readings_tally.batch(batch)  # the same counts as ``take`` gives a seed run here

    if runner is None or not checks:
        for seed in seeds:
            take(seed, run_checks(scenario, seed, checks, budget) if checks else ())
    else:
        # A summary alone needs no result back: each task sends its seeds' tally.
        want: Want = ("looks" if keep_runs or on_result is not None or on_run is not None
                      else "tally" if not steps else "results")
        # A range stays a range: it is what a pool's tasks carry to their workers.
        runner(seeds if isinstance(seeds, range) else list(seeds), want, fold)
    return Comparison(
        scenario=scenario.name,
        description=scenario.description,
        publish_started_ms=scenario.publish_started_ms,
        checks=names,
        seeds=tuple(runs),
        summary=MappingProxyType(counts),
        expect=MappingProxyType({k: v for k, v in scenario.expect.items() if k in names}),
        expect_not_run=tuple(k for k in scenario.expect if k not in names),
        expectations_failed=tuple(failures),
        setups=tuple(setups),
        stats=MappingProxyType(stats),
        seed_range=None if first_seed is None or last_seed is None else (first_seed, last_seed),
        runs_count=total,
        truth=scenario.truth,
        truth_window_s=scenario.truth_window_s,
        readings=readings_tally.summary(),
    )
