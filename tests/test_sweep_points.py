"""A sweep point's scenario is the one validating its whole merged mapping gives."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from pydantic import BaseModel

from platform_testbed.sim.config.scenario import Scenario, validate
from platform_testbed.sim.config.settings import BadInput
from platform_testbed.sim.sweep import file as sweep_file
from platform_testbed.sim.sweep.file import Sweep, load_sweep

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "scenarios" / "sweeps").glob("*.toml"))


def _whole(sweep: Sweep, point: int) -> Scenario:
    """The oracle: the merged mapping validated whole, as before the fast path."""
    raw = sweep_file._with_values(sweep.base, zip(sweep.keys, sweep.point(point), strict=True))
    return validate(raw, sweep.name)


def _same(a: BaseModel, b: BaseModel) -> None:
    assert a == b
    assert a.model_fields_set == b.model_fields_set
    for name in type(a).model_fields:
        left, right = getattr(a, name), getattr(b, name)
        if isinstance(left, BaseModel):
            assert left.model_fields_set == right.model_fields_set, name


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_each_point_equals_the_whole_validation(path: Path) -> None:
    """Random points of every shipped sweep: equal scenarios, the same fields set."""
    sweep = load_sweep(path)
    rng = random.Random(22)
    for point in [0, sweep.points - 1, *(rng.randrange(sweep.points) for _ in range(40))]:
        _same(sweep.scenario(sweep.point(point)), _whole(sweep, point))


def _sweep(tmp_path: Path, axes: str) -> Sweep:
    path = tmp_path / "s.toml"
    path.write_text('scenario = "sept25-crash-loop"\nchecks = ["count"]\n[axes]\n' + axes,
                    encoding="utf-8")
    return load_sweep(path)


def test_a_top_level_key_takes_the_whole_validation(tmp_path: Path) -> None:
    """An axis over a field outside the tables (horizon_s) gives the same scenario."""
    sweep = _sweep(tmp_path, '"horizon_s" = [300.0, 600.0]\n"check.look_delay_s" = [2.0]\n')
    for point in range(sweep.points):
        _same(sweep.scenario(sweep.point(point)), _whole(sweep, point))


def test_a_cached_table_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table validated once is judged again when a TESTBED_ limit it reads changes, and a
    point it then refuses is worded as the whole validation words it."""
    monkeypatch.setenv("TESTBED_MIN_PERIOD_S", "0.0001")
    sweep = _sweep(tmp_path, '"release.crash_after_s" = [0.0005]\n')
    assert sweep.scenario(sweep.point(0)).release.crash_after_s == 0.0005
    monkeypatch.delenv("TESTBED_MIN_PERIOD_S")
    with pytest.raises(BadInput) as whole:
        _whole(sweep, 0)
    with pytest.raises(BadInput) as fast:
        sweep.scenario(sweep.point(0))
    assert str(fast.value) == str(whole.value)
    assert "release.crash_after_s" in str(fast.value)
