"""The optimised simulator core gives the results the un-optimised core gave.

``tests/data/core_golden/results.json`` was recorded from the un-optimised core (first at
f112d06, last from main at 63ffae8, whose sim/world.py, machine.py, site.py and
eventlog.py have none of the speed work): ``compare`` JSON over several worlds and seeds,
plus full traces. When the checks change on purpose, regenerate it from such a checkout,
e.g. ``PYTHONPATH=<main checkout> python tests/test_sweep_core_golden.py --regenerate``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from checks import make_check
from sim import scenario as scenario_mod
from sim.cli import main
from sim.platform import machine as machine_mod
from sim.publish import world as world_mod
from sim.publish.compare import compare
from sim.publish.world import run

DATA = Path(__file__).parent / "data" / "core_golden"
GOLDEN = DATA / "results.json"
CHECKS = ("count", "timestamp")

# (scenario file, --set overrides, first seed, runs): the shipped worlds and variants that
# reach every branch of the core: rollbacks, give-up, sleep, flaky, OOM, many machines,
# a reconciler pass exactly at the horizon.
CASES: list[tuple[str, list[str], int, int]] = [
    ("sept25-crash-loop", [], 1, 5),
    ("gives-up", [], 1, 4),
    ("healthy-release", [], 1, 4),
    ("sleeping-api-crash-on-boot", [], 3, 4),
    ("sept25-crash-loop", ["platform.event_log_cap=3", "check.look_delay_s=3"], 0, 4),
    ("sept25-crash-loop", ["release.machines=4", "platform.max_retries=40"], 0, 3),
    ("sept25-crash-loop", ["publish.rollback='delete'"], 0, 3),
    ("sept25-crash-loop", ["platform.restart_policy='always'", "reconciler.interval_s=60"], 0, 3),
    ("sept25-crash-loop", ["platform.restart_policy='no'"], 0, 3),
    ("sept25-crash-loop", ["release.behavior='flaky'", "release.crash_probability=0.3"], 0, 4),
    ("sept25-crash-loop", ["release.behavior='oom'", "traffic.rps=40"], 0, 3),
    ("sept25-crash-loop", ["release.behavior='crash_after_starts'", "release.crash_after_starts=2",
                           "platform.max_retries=100"], 0, 3),
    ("sept25-crash-loop", ["release.behavior='slow_boot'", "release.slow_boot_s=90"], 0, 3),
    ("sept25-crash-loop", ["previous.behavior='crash_after'", "release.behavior='healthy'"], 0, 3),
    ("gives-up", ["release.machines=3", "platform.jitter=0"], 0, 3),
    ("healthy-release", ["release.machines=12", "reconciler.interval_s=30", "traffic.rps=0"], 0, 2),
    ("sleeping-api-crash-on-boot", ["publish.rollback='delete'", "release.machines=2"], 0, 3),
    ("sept25-crash-loop", ["release.crash_after_s=40", "check.look_delay_s=15",
                           "platform.max_retries=1000", "horizon_s=2000"], 0, 3),
    ("sept25-crash-loop", ["reconciler.interval_s=600"], 0, 3),
    ("sept25-crash-loop", ["previous.behavior='flaky'", "previous.flaky_interval_s=7",
                           "platform.max_retries=500"], 0, 4),
    # No jitter, boot 1 s, poll 1 s: the machine reads started at the very instant of the
    # check's poll, an order only SimPy's event queue settles (lazy machines rerun eagerly).
    ("sept25-crash-loop", ["platform.jitter=0", "platform.boot_s=1.0"], 0, 2),
    ("gives-up", ["platform.jitter=0", "platform.boot_s=1.0", "release.machines=2"], 0, 2),
]
TRACED: list[tuple[str, list[str], int]] = [
    ("sept25-crash-loop", [], 1),
    ("sleeping-api-crash-on-boot", [], 3),
    ("gives-up", ["release.machines=2"], 2),
]


def _load(name: str, sets: list[str]) -> scenario_mod.Scenario:
    return scenario_mod.load(str(DATA / f"{name}.toml"), sets)


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _case_result(name: str, sets: list[str], seed: int, runs: int) -> Any:
    loaded = _load(name, sets)
    checks = [make_check(c, loaded.check.model_dump()) for c in CHECKS]
    return compare(loaded, checks, range(seed, seed + runs))


def _traced_result(name: str, sets: list[str], seed: int) -> Any:
    loaded = _load(name, sets)
    out = []
    for c in CHECKS:
        result = run(loaded, seed, make_check(c, loaded.check.model_dump()), trace=True)
        out.append(_jsonable(result.trace))
    return out


def _key(name: str, sets: list[str], seed: int) -> str:
    return " ".join([name, *sets, f"seed={seed}"])


def record() -> dict[str, Any]:
    """Every case's results, keyed by a readable name."""
    return {
        "compare": {_key(n, s, seed): _case_result(n, s, seed, r) for n, s, seed, r in CASES},
        "traces": {_key(n, s, seed): _traced_result(n, s, seed) for n, s, seed in TRACED},
    }


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    """The results recorded from the un-optimised core."""
    loaded: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return loaded


@pytest.mark.parametrize(("name", "sets", "seed", "runs"), CASES)
def test_compare_matches_unoptimised_core(
    golden: dict[str, Any], name: str, sets: list[str], seed: int, runs: int
) -> None:
    """Same scenario and seeds give the compare JSON the un-optimised core gave."""
    expected = golden["compare"][_key(name, sets, seed)]
    assert json.loads(json.dumps(_case_result(name, sets, seed, runs))) == expected


@pytest.mark.parametrize(("name", "sets", "seed"), TRACED)
def test_trace_matches_unoptimised_core(
    golden: dict[str, Any], name: str, sets: list[str], seed: int
) -> None:
    """A traced run still records every state change and event to the horizon."""
    expected = golden["traces"][_key(name, sets, seed)]
    assert json.loads(json.dumps(_traced_result(name, sets, seed))) == expected


def test_cli_json_matches_unoptimised_core(capsys: pytest.CaptureFixture[str]) -> None:
    """`testbed compare sept25-crash-loop --runs 5 --json` prints the bytes it printed before."""
    path = str(DATA / "sept25-crash-loop.toml")
    assert main(["compare", path, "--check", "count", "--check", "timestamp", "--runs", "5", "--json"]) == 0
    expected = (DATA / "sept25-runs5.json").read_text(encoding="utf-8")
    assert capsys.readouterr().out == expected


if __name__ == "__main__":
    if sys.argv[1:] != ["--regenerate"]:
        sys.exit("usage: python tests/test_sweep_core_golden.py --regenerate")
    GOLDEN.write_text(json.dumps(record(), sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")


def test_tie_cases_take_the_eager_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The no-jitter cases do hit a lazy machine's tie, so the eager rerun stays tested."""
    ties = []
    real = world_mod._simulate_in

    def counting(world: Any, check: Any, trace: bool) -> Any:
        try:
            return real(world, check, trace)
        except machine_mod.Tie:  # type: ignore[attr-defined,unused-ignore]
            ties.append(world.seed)
            raise

    monkeypatch.setattr(world_mod, "_simulate_in", counting)
    name, sets, seed, runs = CASES[-2]
    _case_result(name, sets, seed, runs)
    assert ties
