"""`testbed region sept25`: the points of the unknowns consistent with 25 September."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from platform_testbed.sim.cli import region as region_cli
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.cli.region import find_region
from platform_testbed.sim.sweep.file import load_sweep

SMALL = """\
name = "small_region"
scenario = "sept25-crash-loop"
checks = ["count", "timestamp"]
seeds = 2
[axes]
"platform.restart_delay_s" = [0.3, 1.0]
"platform.boot_s" = [2.09]
"check.look_delay_s" = [10.0, 30.0]
"""


def _rows(sweep, outcomes):
    """Rows as a sweep gives them: ``outcomes[point][seed] = (count, timestamp)``."""
    rows = []
    for index in range(sweep.points):
        values = dict(zip(sweep.keys, sweep.point(index), strict=True))
        for seed, pair in zip(sweep.seeds, outcomes[index], strict=True):
            for check, outcome in zip(("count", "timestamp"), pair, strict=True):
                rows.append({"point": index, "seed": seed, **values,
                             "check": check, "outcome": outcome})
    return rows


@pytest.fixture
def small(tmp_path: Path):
    path = tmp_path / "small_region.toml"
    path.write_text(SMALL)
    return load_sweep(path)


def test_a_point_is_consistent_only_if_count_missed_and_timestamp_caught_at_every_seed(small):
    """One seed where count caught, or timestamp missed, puts the point outside the region."""
    ok, count_caught, ts_missed = ("missed", "caught"), ("caught", "caught"), ("missed", "missed")
    rows = _rows(small, [[ok, ok], [ok, count_caught], [ts_missed, ok], [ok, ok]])
    found = find_region(small, rows)
    assert found.consistent == (small.point(0), small.point(3))
    assert found.counts("check.look_delay_s") == [(10.0, 1, 2), (30.0, 1, 2)]


def test_a_point_missing_a_seed_is_not_counted(small):
    """An interrupted sweep's half-run point is not called consistent."""
    ok = ("missed", "caught")
    rows = [r for r in _rows(small, [[ok, ok]] * 4) if not (r["point"] == 1 and r["seed"] == 2)]
    assert small.point(1) not in find_region(small, rows, interrupted=True).consistent


def test_the_shipped_point_is_judged_by_the_run(small):
    """The base scenario's point (delay 0.3, boot 2.09, look 10) is on the grid, and reported."""
    ok, bad = ("missed", "caught"), ("caught", "caught")
    base_index = [small.point(i) for i in range(small.points)].index((0.3, 2.09, 10.0))
    outcomes = [[ok, ok]] * small.points
    assert find_region(small, _rows(small, outcomes)).shipped_consistent is True
    outcomes[base_index] = [ok, bad]
    found = find_region(small, _rows(small, outcomes))
    assert found.shipped_consistent is False
    assert found.share(found.shipped) == 0.5


def test_each_point_gets_the_share_of_its_seeds_that_held(small):
    """A share counts the seeds where count missed and timestamp caught, per point and per value."""
    ok, count_caught = ("missed", "caught"), ("caught", "caught")
    rows = _rows(small, [[ok, ok], [ok, count_caught], [count_caught, count_caught], [ok, ok]])
    found = find_region(small, rows)
    assert [found.share(small.point(i)) for i in range(4)] == [1.0, 0.5, 0.0, 1.0]
    assert found.at_least(0.5) == 3
    assert found.at_least(0.9) == 2
    # restart delay 0.3 holds points 0 and 1 (the last axis varies fastest): 1 and 0.5.
    assert found.mean_share("platform.restart_delay_s", 0.3) == 0.75


def test_region_command_runs_the_sweep_and_agrees_with_compare(small, monkeypatch, capsys):
    """`region --json` on a small sweep: each point's verdict is what compare gives its seeds."""
    monkeypatch.setattr(region_cli, "load_sweep", lambda _name: small)
    assert main(["region", "sept25", "--workers", "1", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    loaded = json.loads(resources.files("platform_testbed.sim").joinpath(
        "schemas/region.schema.json").read_text("utf-8"))
    jsonschema.validate(document, loaded, cls=jsonschema.Draft202012Validator)
    for index in range(small.points):
        delay, boot, look = small.point(index)
        main(["compare", "sept25-crash-loop", "--check", "count", "--check", "timestamp",
              "--runs", "2", "--seed", "1", "--json",
              "--set", f"platform.restart_delay_s={delay}", "--set", f"platform.boot_s={boot}",
              "--set", f"check.look_delay_s={look}"])
        summary = json.loads(capsys.readouterr().out)["summary"]
        expected = summary["count"]["missed"] == 2 and summary["timestamp"]["caught"] == 2
        point = {"platform.restart_delay_s": delay, "platform.boot_s": boot,
                 "check.look_delay_s": look}
        assert (point in document["consistent"]) is expected, point


def test_region_rejects_an_unknown_incident(capsys):
    """An unknown region name is bad input: exit 2, one line naming the choices."""
    with pytest.raises(SystemExit) as ended:
        main(["region", "sept26"])
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "invalid choice: 'sept26'" in err


def test_the_shipped_region_runs_twenty_seeds_a_point():
    """`testbed region sept25` judges each point on 20 seeds or more: a share, not a few lucky seeds."""
    assert len(load_sweep("sept25_region").seeds) >= 20


def test_region_text_prints_each_shipped_share(small):
    """The text says the shipped point's share of seeds and the points at 90% or more."""
    ok, bad = ("missed", "caught"), ("caught", "caught")
    base_index = [small.point(i) for i in range(small.points)].index((0.3, 2.09, 10.0))
    outcomes = [[ok, ok]] * small.points
    outcomes[base_index] = [ok, bad]
    text = " ".join(region_cli.region_text(find_region(small, _rows(small, outcomes))).split())
    assert "1 of 2 seeds (50%), NOT consistent" in text
    assert "consistent points (every seed): 3 of 4; at 90% of seeds or more: 3" in text
    assert "truth serves" in text


def test_other_checks_are_tallied_where_the_region_holds_and_do_not_decide_it(small):
    """flyctl-smoke rows never break a point; their outcomes are counted over consistent worlds."""
    ok, bad = ("missed", "caught"), ("caught", "caught")
    rows = _rows(small, [[ok, ok], [bad, ok], [ok, ok], [ok, ok]])
    for row in list(rows):
        if row["check"] == "count":
            rows.append(row | {"check": "flyctl-smoke",
                               "outcome": "caught" if row["point"] == 0 else "missed"})
    found = find_region(small, rows)
    assert found.consistent == (small.point(0), small.point(2), small.point(3))
    assert found.others_where_consistent("flyctl-smoke") == {"caught": 2, "missed": 4}
    text = region_cli.region_text(found)
    assert "flyctl-smoke: caught 2, missed 4 of 6 worlds" in " ".join(text.split())
