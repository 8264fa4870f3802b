"""sept25-crash-loop in its write-up's shape: one crash and one start a cycle, two crashes a look."""

from __future__ import annotations

from platform_testbed.checks import CountCheck, TimestampCheck
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish import world

#: Few seeds keep the test fast; the 100-seed figure (count missed 100, timestamp caught 100)
#: is measured with `testbed compare sept25-crash-loop --runs 100 --seed 0` (CHANGELOG).
SEEDS = range(8)


def _crashes(look, since_ms):
    return [e.timestamp for m in look.look.machines for e in m.events
            if e.is_crash and e.timestamp >= since_ms]


def test_count_misses_with_two_crashes_at_looks_2_and_3_and_timestamp_catches():
    """At every seed: count's looks 2 and 3 each list two crashes, different ones; timestamp fails it."""
    loaded = scenario.load("sept25-crash-loop")
    since = loaded.publish_started_ms
    for seed in SEEDS:
        count = world.run(loaded, seed, CountCheck(**loaded.check.model_dump()))
        stamp = world.run(loaded, seed, TimestampCheck(**loaded.check.model_dump()))
        assert (count.outcome, stamp.outcome) == ("missed", "caught"), seed
        look2, look3 = _crashes(count.looks[-2], since), _crashes(count.looks[-1], since)
        assert len(look2) == len(look3) == 2, (seed, look2, look3)
        assert not set(look2) & set(look3), seed  # the window slid: different crashes


def test_each_cycle_writes_one_crash_and_one_start():
    """The write-up: 'each cycle adds one crash and one start' (profile fly-exit-start)."""
    loaded = scenario.load("sept25-crash-loop")
    traced = world.run(loaded, 1, CountCheck(**loaded.check.model_dump()), trace=True)
    assert traced.trace is not None
    events = traced.trace.machines[0].events
    after = [e for e in events if e.timestamp > loaded.publish_started_ms]
    kinds = [("crash" if e.is_crash else e.type) for e in after[:12]]
    assert kinds == ["start", "crash"] * 6


def test_compare_shows_two_crashes_in_counts_reason(capsys):
    """The report's reason for count names two crashes at looks 2 and 3, as the write-up does."""
    main(["compare", "sept25-crash-loop", "--check", "count"])
    out = " ".join(capsys.readouterr().out.split())
    assert "did not increase between looks 2 and 3 (m1 2)" in out
