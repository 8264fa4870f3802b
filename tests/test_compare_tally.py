"""compare's summary from each task's ``SeedTally`` is the one its results give, bit for bit."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from platform_testbed.checks import BUILTIN_CHECKS, Check, Look, Verdict, Wait
from platform_testbed.checks.protocol import Step
from platform_testbed.sim.checkload.loader import build_checks
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish.compare import (
    Batch,
    CheckStats,
    Comparison,
    Runner,
    SeedTally,
    Want,
    compare,
)
from platform_testbed.sim.publish.sharing import run_checks
from platform_testbed.sim.publish.world import RunResult
from platform_testbed.sim.show import report
from platform_testbed.sim.sweep.seeds import SeedWork
from tests.procs import run_alone

ROOT = Path(__file__).parents[1]
SCENARIOS = ("sept25-crash-loop", "slow-crash-loop", "healthy-release", "gives-up")
NAMES = tuple(BUILTIN_CHECKS)


class Flaky:
    """Raises in some worlds (by the newest events' timestamps), else passes at its third look."""

    name = "flaky"

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Wait a second between looks; raise where the newest events' times sum to a multiple of 7."""
        if not looks:
            return Wait(1.0)
        if sum(e.timestamp for m in looks[-1].machines for e in m.events[:1]) % 7 == 0:
            raise ValueError("a world this check cannot read")
        return Verdict(True, "three looks") if len(looks) >= 3 else Wait(1.0)


def _tasks(count: int, cuts: Sequence[int]) -> list[tuple[int, int]]:
    """``range(count)`` cut at ``cuts`` (any order, repeats, out of range) into tasks."""
    edges = sorted({0, count, *(c % (count + 1) for c in cuts)})
    return list(itertools.pairwise(edges))


def tallied(loaded: scenario.Scenario, checks: Sequence[Check], cuts: Sequence[int],
            asked: list[Want] | None = None) -> Runner:
    """A runner that tallies its tasks here, as a pool's workers do (``SeedTally.of``)."""

    def runner(seeds: Sequence[int], want: Want, fold: Callable[[Batch], None]) -> None:
        if asked is not None:
            asked.append(want)
        for lo, hi in _tasks(len(seeds), cuts):
            chunk = seeds[lo:hi]
            if want == "tally":
                fold(SeedTally.of(chunk, (run_checks(loaded, s, checks) for s in chunk)))
            else:
                fold([(s, run_checks(loaded, s, checks)) for s in chunk])

    return runner


def _same(tally: Comparison, results: Comparison) -> None:
    assert tally == results  # every count, every float sum, every miss, in order
    assert tally.to_json() == results.to_json()
    assert report.summary(tally, debug=True, at=200) == report.summary(results, debug=True, at=200)
    assert report.expectations(tally, at=200) == report.expectations(results, at=200)


@given(
    name=st.sampled_from(SCENARIOS),
    picked=st.permutations([*NAMES, "flaky"]).flatmap(
        lambda names: st.integers(1, len(names)).map(lambda n: names[:n])),
    expect=st.dictionaries(st.sampled_from(NAMES),
                           st.sampled_from(("caught", "missed", "passed", "blind")), max_size=3),
    seeds=st.builds(lambda first, count: range(first, first + count),
                    st.integers(0, 2**40), st.integers(1, 9)),
    cuts=st.lists(st.integers(0, 9), max_size=4),
)
def test_a_summary_from_tallies_is_the_one_from_every_result(
    name: str, picked: list[str], expect: dict[str, str], seeds: range, cuts: list[int],
) -> None:
    """Generated scenarios, check sets, expectations, seed ranges and task cuts: tallies fold
    into the same Comparison (summary, stats, misses, --json, the table) as the results."""
    loaded = scenario.load(name, [f"expect.{k}={v}" for k, v in expect.items()])
    builtins = [n for n in picked if n != "flaky"]
    built = {b.setup.name: b.check for b in build_checks(builtins, loaded.check, {})}
    checks = [Flaky() if n == "flaky" else built[n] for n in picked]
    asked: list[Want] = []
    tally = compare(loaded, checks, seeds, keep_runs=False,
                    runner=tallied(loaded, checks, cuts, asked))
    assert asked == ["tally"]  # the tally path it names ran
    _same(tally, compare(loaded, checks, seeds, keep_runs=False))


def test_tallies_carry_errors_and_misses_across_tasks() -> None:
    """A check raising in some worlds and expectations failing in some: the first error's
    seed and traceback, the error count and every miss, in order, as the results give."""
    loaded = scenario.load("sept25-crash-loop",
                           ["expect.count=caught", "expect.timestamp=missed"])
    checks = [*(b.check for b in build_checks(["count", "timestamp"], loaded.check, {})), Flaky()]
    seeds = range(40)
    tally = compare(loaded, checks, seeds, keep_runs=False, runner=tallied(loaded, checks, [2, 7, 20]))
    _same(tally, compare(loaded, checks, seeds, keep_runs=False))
    flaky = tally.stats["flaky"]
    assert 0 < flaky.errors < 40  # some worlds raised, some did not: the test sees both
    assert flaky.first_error_seed is not None
    assert flaky.first_error_seed >= 2  # the first task (seeds 0 and 1) raised nowhere
    assert "cannot read" in (flaky.first_error_detail or "")
    assert len(tally.expectations_failed) == 80  # count and timestamp, every seed
    assert [m.check for m in tally.expectations_failed[:2]] == ["count", "timestamp"]


def test_compare_asks_for_a_tally_only_for_a_summary_alone() -> None:
    """Runs kept, a callback or a step: the runner is asked for results, not a tally."""
    loaded = scenario.load("sept25-crash-loop")
    checks = [b.check for b in build_checks(["count"], loaded.check, {})]

    def asked(**options: object) -> Want:
        wants: list[Want] = []
        compare(loaded, checks, range(2), runner=tallied(loaded, checks, [], wants),
                **options)  # type: ignore[arg-type]
        return wants[0]

    def step(s: scenario.Scenario, seed: int, bad: bool) -> RunResult:
        return run_checks(s, seed, checks)[0]

    named = type("Step", (), {"name": "step", "__call__": staticmethod(step)})()
    assert asked(keep_runs=False) == "tally"
    assert asked() == "looks"
    assert asked(keep_runs=False, on_run=lambda run: None) == "looks"
    assert asked(keep_runs=False, on_result=lambda result: None) == "looks"
    assert asked(keep_runs=False, steps=[named]) == "results"


def test_a_seed_work_tally_is_its_seeds_tally() -> None:
    """A pool's summary task (``SeedWork`` asked for a tally) gives ``SeedTally.of`` its seeds."""
    loaded = scenario.load("sept25-crash-loop")
    names = ("count", "flyctl-smoke")
    work = SeedWork(loaded, names, {}, range(10, 30), "tally")
    lo, got = work(4, 9)
    checks = [b.check for b in build_checks(names, loaded.check, {})]
    assert lo == 4
    assert got == SeedTally.of(range(14, 19), (run_checks(loaded, s, checks) for s in range(14, 19)))
    assert len(got) == 5
    assert isinstance(got, SeedTally)
    assert got.seeds == range(14, 19)  # a range stays one


# --- the float sums --------------------------------------------------------------------

_FLOATS = st.floats(allow_nan=False, allow_infinity=False)


@functools.cache
def _base() -> RunResult:
    loaded = scenario.load("sept25-crash-loop")
    return run_checks(loaded, 1, [b.check for b in build_checks(["count"], loaded.check, {})])[0]


@settings(max_examples=200)
@given(values=st.lists(st.tuples(_FLOATS, st.none() | _FLOATS), max_size=40),
       cuts=st.lists(st.integers(0, 40), max_size=5))
@example(values=[(1e16, 1e16), (1.0, None), (-1e16, 1.0), (0.0, -1e16)], cuts=[1, 3])
@example(values=[(0.1, 0.0)] * 10, cuts=[5])
def test_the_folds_float_sums_are_the_left_to_right_sums(
    values: list[tuple[float, float | None]], cuts: list[int],
) -> None:
    """down_s and decided_s folded from tallies, in any cut, have the bits of ``acc = acc + x``
    over the seeds in order (and so of ``CheckStats.plus``), not a compensated sum's."""
    base = _base()
    results = [dataclasses.replace(base, seed=i, site=dataclasses.replace(base.site, down_s=d),
                                   decided_at_s=t) for i, (d, t) in enumerate(values)]
    folded = CheckStats()
    for lo, hi in _tasks(len(results), cuts):
        tally = SeedTally.of(range(lo, hi), ([r] for r in results[lo:hi]))
        folded = folded.folded(tally.checks[0], hi - lo)
    plus = functools.reduce(CheckStats.plus, results, CheckStats())
    down = decided = 0.0
    for d, t in values:
        down = down + d
        decided = decided + (t or 0.0)
    assert folded.down_s.hex() == plus.down_s.hex() == down.hex()
    assert folded.decided_s.hex() == plus.decided_s.hex() == decided.hex()
    assert folded == plus


def test_the_fold_does_not_compensate_its_rounding() -> None:
    """1e16 + 1 - 1e16 folds to 0.0 (the loop's answer), where ``math.fsum`` gives 1.0."""
    base = _base()
    downs = [1e16, 1.0, -1e16]
    results = [dataclasses.replace(base, site=dataclasses.replace(base.site, down_s=d))
               for d in downs]
    tally = SeedTally.of(range(3), ([r] for r in results))
    assert CheckStats().folded(tally.checks[0], 3).down_s == 0.0
    assert math.fsum(downs) == 1.0  # the answer a compensated sum would have given


# --- on a pool --------------------------------------------------------------------------

POOLED = """
from platform_testbed.checks import BUILTIN_CHECKS
from platform_testbed.sim.checkload.loader import build_checks
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish.compare import compare
from platform_testbed.sim.sweep.seeds import pooled

if __name__ == "__main__":
    loaded = scenario.load("sept25-crash-loop", ["expect.count=caught"])
    names = list(BUILTIN_CHECKS)
    checks = [b.check for b in build_checks(names, loaded.check, {})]
    seeds = range(11, 41)
    serial = compare(loaded, checks, seeds, keep_runs=False)
    for per_task in (1, 7, None):
        pool = compare(loaded, checks, seeds, keep_runs=False,
                       runner=pooled(loaded, names, {}, 2, None, per_task=per_task))
        assert pool == serial, per_task
        assert pool.to_json() == serial.to_json()
    assert len(serial.expectations_failed) == 30
    print("same")
"""


def test_a_pooled_summary_folds_as_the_serial_one(tmp_path: Path) -> None:
    """Summary tallies from 2 workers, one seed a task (finishing in any order), 7, or sized
    by measurement: the Comparison of the serial run. In a process of its own, as
    tests/test_compare_pool.py's (the pool's forkserver outlives the pool)."""
    assert run_alone(tmp_path, POOLED).strip() == "same"


def _testbed(*args: str, cwd: Path) -> tuple[int, bytes]:
    done = subprocess.run([sys.executable, "-m", "platform_testbed", *args], cwd=cwd,
                          capture_output=True, env=os.environ | {"PYTHONPATH": str(ROOT)},
                          check=False, timeout=300)
    return done.returncode, done.stdout


def test_compare_summary_on_two_workers_prints_what_one_does(tmp_path: Path) -> None:
    """--summary --json and the --debug table with failed expectations: the same bytes and
    exit status on 1 worker (every result folded) and 2 (tallies)."""
    common = ["compare", "slow-crash-loop", "--runs", "120", "--seed", "3", "--summary",
              "--expect", "count=caught", "--expect", "flyctl-smoke=passed"]
    for extra in (["--json"], ["--debug"]):
        one = _testbed(*common, *extra, "--workers", "1", cwd=tmp_path)
        two = _testbed(*common, *extra, "--workers", "2", cwd=tmp_path)
        assert one == two
        assert one[1]
