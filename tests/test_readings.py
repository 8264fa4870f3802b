"""Unknowns that decide a verdict are axes: flyctl's listen-wait reading and restart_count's meaning."""

from __future__ import annotations

import json

from platform_testbed.checks import CountCheck, FlyctlSmokeCheck
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish import world
from platform_testbed.sim.publish.compare import READINGS, compare, depends_on


def _exit_counts(reading: str) -> list[tuple[int, bool]]:
    loaded = scenario.load("sept25-crash-loop", [f"platform.restart_count_reading={reading}"])
    traced = world.run(loaded, 1, CountCheck(**loaded.check.model_dump()), trace=True)
    assert traced.trace is not None
    return [(e.restart_count, e.restarting) for e in traced.trace.machines[0].events
            if e.is_crash][:3]


def test_restart_count_counts_the_restart_an_exit_triggers_only_under_that_reading():
    """restarts-so-far: the first crash says 0; counts-this-restart: 1 (the restart it causes)."""
    assert _exit_counts("restarts-so-far") == [(0, True), (1, True), (2, True)]
    assert _exit_counts("counts-this-restart") == [(1, True), (2, True), (3, True)]


def test_a_give_up_exit_counts_no_restart_under_either_reading():
    """An exit that triggers no restart (the platform gave up) says the restarts before it."""
    for reading in ("restarts-so-far", "counts-this-restart"):
        loaded = scenario.load("no-retries", [f"platform.restart_count_reading={reading}"])
        traced = world.run(loaded, 1, CountCheck(**loaded.check.model_dump()), trace=True)
        assert traced.trace is not None
        (crash,) = [e for e in traced.trace.machines[0].events if e.is_crash]
        assert (crash.restart_count, crash.restarting) == (0, False), reading


def test_depends_on_names_the_reading_that_alone_changes_the_outcome():
    """A reading is named when two combinations differing in it alone disagree."""
    runs = [(("ps-fails", "restarts-so-far"), "missed"), (("ps-fails", "counts-this-restart"), "caught"),
            (("no-listener", "restarts-so-far"), "missed"),
            (("no-listener", "counts-this-restart"), "caught")]
    assert depends_on("flyctl-smoke", runs) == ("platform.restart_count_reading",)
    assert depends_on("flyctl-smoke", [(v, "missed") for v, _ in runs]) == ()


def test_compare_runs_flyctl_smoke_under_every_reading_and_says_what_it_depends_on():
    """sept25: flyctl-smoke misses under restarts-so-far and catches under counts-this-restart."""
    loaded = scenario.load("sept25-crash-loop")
    got = compare(loaded, [FlyctlSmokeCheck()], range(1, 3))
    (run, _) = got.seeds
    outcomes = {r.values: r.outcome for r in run.readings["flyctl-smoke"]}
    assert outcomes == {("ps-fails", "restarts-so-far"): "missed",
                        ("ps-fails", "counts-this-restart"): "caught",
                        ("no-listener", "restarts-so-far"): "missed",
                        ("no-listener", "counts-this-restart"): "caught"}
    assert [r.own for r in run.readings["flyctl-smoke"]] == [True, False, False, False]
    assert run.depends_on("flyctl-smoke") == ("platform.restart_count_reading",)
    assert got.depends_on("flyctl-smoke") == ("platform.restart_count_reading",)
    assert set(READINGS) == {"flyctl-smoke"}


def test_the_listen_reading_decides_gives_up(capsys):
    """gives-up: flyctl's code path (no wait) catches, the no-listener reading misses."""
    assert main(["compare", "gives-up", "--check", "flyctl-smoke", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    readings = doc["runs"][0]["readings"]["flyctl-smoke"]
    assert "listen_reading" in readings["depends_on"]
    assert doc["readings"]["flyctl-smoke"]["keys"] == ["listen_reading",
                                                        "platform.restart_count_reading"]


def test_the_text_report_prints_the_verdict_under_each_reading(capsys):
    """compare --check flyctl-smoke: one line per combination, the run's own marked, and 'depends on'."""
    assert main(["compare", "sept25-crash-loop", "--check", "flyctl-smoke"]) == 0
    out = capsys.readouterr().out
    assert "ps-fails, restarts-so-far: pass, MISSED (this run)" in out
    assert "ps-fails, counts-this-restart: fail, caught" in out
    assert "depends on: platform.restart_count_reading" in out


def test_a_reading_set_by_the_scenario_is_the_runs_own(capsys):
    """--set platform.restart_count_reading=counts-this-restart: that combination is this run's."""
    assert main(["compare", "sept25-crash-loop", "--check", "flyctl-smoke", "--set",
                 "platform.restart_count_reading=counts-this-restart"]) == 0
    out = capsys.readouterr().out
    assert "ps-fails, counts-this-restart: fail, caught (this run)" in out


def test_the_no_listener_variant_gives_the_other_reading_in_the_same_world():
    """flyctl-smoke-no-listener beside flyctl-smoke: a sweep's listen-reading axis in one world."""
    from platform_testbed.checks.flyctl import FlyctlNoListenerSmokeCheck  # noqa: PLC0415

    loaded = scenario.load("gives-up")
    got = compare(loaded, [FlyctlSmokeCheck(), FlyctlNoListenerSmokeCheck()], range(1, 2))
    assert got.summary["flyctl-smoke"].caught == 1
    assert got.summary["flyctl-smoke-no-listener"].missed == 1
    (run,) = got.seeds
    assert set(run.readings) == {"flyctl-smoke"}  # the variant is a reading, not a new check


def test_a_summary_carries_the_readings_on_one_process_and_on_a_pool():
    """keep_runs=False over a sized range: the summary still carries the readings' counts
    (test_compare_tally and the CLI's --summary on 1 and 2 workers check they are the same)."""
    loaded = scenario.load("sept25-crash-loop")
    got = compare(loaded, [FlyctlSmokeCheck()], range(3), keep_runs=False)
    assert got.seeds == ()
    counts = got.readings["flyctl-smoke"]
    assert counts[("ps-fails", "restarts-so-far")].missed == 3
    assert counts[("ps-fails", "counts-this-restart")].caught == 3
