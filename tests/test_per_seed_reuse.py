"""What a seed or a point's values fix is derived once and reused, with the same rows.

A sweep's worlds reuse, across points, the seed's random streams (``sim.platform.streams``),
the seed's traffic total (``sim.platform.traffic``), each table validated for its axis
values (``Sweep.scenario``) and the built-in checks built for a check table
(``sim.sweep.units``). Every world must come out as if nothing were kept: the oracle here
is the same world computed from scratch (every cache emptied first, the whole scenario
validated, the checks loaded by the loader).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from platform_testbed.sim.checkload.loader import load_checks
from platform_testbed.sim.config.scenario import validate
from platform_testbed.sim.platform import streams, traffic
from platform_testbed.sim.publish.compare import result_row
from platform_testbed.sim.publish.sharing import run_checks
from platform_testbed.sim.sweep import file, units
from platform_testbed.sim.sweep.file import _with_values, load_sweep
from platform_testbed.sim.sweep.units import unit_rows

ROOT = Path(__file__).resolve().parent.parent
SWEEP = load_sweep(ROOT / "scenarios" / "sweeps" / "sept25_unknowns.toml")


def _forget() -> None:
    """Empty every cache this reuse keeps."""
    streams._KEPT.clear()
    traffic._TOTALS.clear()
    file._BY_VALUES.clear()
    file._TABLES.clear()
    units._CHECKS.clear()


def _from_scratch(unit: int) -> str:
    """One unit's rows with nothing kept: the whole scenario validated, checks loaded anew."""
    _forget()
    point, seed_index = divmod(unit, len(SWEEP.seeds))
    values = SWEEP.point(point)
    scenario = validate(_with_values(SWEEP.base, zip(SWEEP.keys, values, strict=True)), SWEEP.name)
    checks = load_checks(list(SWEEP.checks), scenario.check)
    head = {"point": point, "seed": SWEEP.seeds[seed_index]} | dict(
        zip(SWEEP.keys, values, strict=True))
    return json.dumps([head | result_row(r) for r in run_checks(
        scenario, SWEEP.seeds[seed_index], checks)], default=str)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(0, SWEEP.units - 1), min_size=2, max_size=12), st.randoms())
def test_rows_with_everything_kept_equal_rows_from_scratch(picked: list[int],
                                                           rnd: random.Random) -> None:
    """Units run one after another (seeds and tables reused, in any order) give each the
    rows it gives computed alone from scratch, byte for byte."""
    expected = {u: _from_scratch(u) for u in picked}
    _forget()
    order = picked * 2  # every seed and table met again
    rnd.shuffle(order)
    for unit in order:
        assert json.dumps(unit_rows([unit], SWEEP), default=str) == expected[unit]


def test_a_seed_seen_again_gets_the_same_streams() -> None:
    """The machines' generators of a seed's later worlds start where random.Random(seed)'s
    children do, and the traffic's and fly-proxy's seeds are the next draws."""
    _forget()
    root = random.Random(7)
    seeds = [root.getrandbits(64) for _ in range(3)]
    expected = ([random.Random(s).random() for s in seeds], root.getrandbits(64),
                root.getrandbits(64))
    for _ in range(3):  # first (seeded), second (state kept), third (state copied)
        kept = streams.streams(7, 3)
        got = ([r.random() for r in kept.machine_rngs()], kept.traffic_seed, kept.proxy_seed)
        assert got == expected
    assert streams.streams(7, 3).states is not None  # the later worlds copy a kept state
