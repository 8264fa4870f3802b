"""The ground truth says what it judges: ``serves`` by default, ``crash`` as an option."""

from __future__ import annotations

import json

import pytest

from platform_testbed.checks import TimestampCheck
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config import scenario
from platform_testbed.sim.config.truth import DEFAULT_WINDOW_S, rule
from platform_testbed.sim.kit.testing import App, world
from platform_testbed.sim.publish import world as worlds

#: The app the hunt found (release.exit_code=0 on sept25's base): exits 0 2.5 s after start.
CLEAN_EXIT = ["release.exit_code=0"]


def _bad(sets: list[str], name: str = "sept25-crash-loop") -> bool:
    loaded = scenario.load(name, sets)
    return worlds.ground_truth(loaded, loaded.seed)


def test_a_clean_exit_that_leaves_the_app_down_is_bad_by_default_and_good_by_crash():
    """exit 0 at +2.5 s, stopped after: bad under serves (not serving), good under crash."""
    assert _bad(CLEAN_EXIT)
    assert not _bad([*CLEAN_EXIT, "truth=crash"])


def test_a_clean_exit_loop_under_always_is_bad_though_it_reads_started_at_times():
    """restart: always and exit 0 every 2.5 s: the app keeps leaving started, so it is bad."""
    assert _bad([*CLEAN_EXIT, "platform.restart_policy=always"])
    assert not _bad([*CLEAN_EXIT, "platform.restart_policy=always", "truth=crash"])


def test_a_clean_exit_after_the_window_is_good():
    """An app that exits 0 after the window (Fly: 'scale down by exiting cleanly') is good."""
    sets = [*CLEAN_EXIT, "release.crash_after_s=400", "horizon_s=900"]
    assert not _bad(sets)
    assert _bad([*sets, "truth_window_s=500"])


def test_a_healthy_release_left_asleep_with_nobody_to_wake_it_does_not_serve():
    """flyctl leaves a stopped machine stopped: with no autostart the release never serves."""
    sets = ["release.behavior=healthy", "traffic.autostart=false"]
    assert _bad(sets, "sleeping-api-flyctl")
    assert not _bad([*sets, "truth=crash"], "sleeping-api-flyctl")
    # fly-proxy's autostart starts it at the first request: it serves.
    assert not _bad(["release.behavior=healthy"], "sleeping-api-flyctl")


def test_a_boot_slower_than_the_window_is_bad_one_inside_it_good():
    """Judged at the window's end: a 60 s boot serves by +300 s, a 400 s one does not."""
    base = ["release.behavior=slow_boot", "release.slow_boot_s=60", "horizon_s=900"]
    assert not _bad(base)
    assert _bad(["release.behavior=slow_boot", "release.slow_boot_s=400", "horizon_s=900"])
    assert not _bad(["release.behavior=slow_boot", "release.slow_boot_s=400", "horizon_s=900",
                     "truth=crash"])


def test_the_hunts_clean_exit_world_is_caught_by_default_and_a_false_alarm_by_crash():
    """The world behind hunt's clean-exit false alarm: timestamp fails it, which serves calls right."""
    for truth, outcome in (("serves", "caught"), ("crash", "false_alarm")):
        loaded = scenario.load("sept25-crash-loop", [*CLEAN_EXIT, f"truth={truth}"])
        result = worlds.run(loaded, loaded.seed, TimestampCheck(**loaded.check.model_dump()))
        assert result.outcome == outcome, truth


@pytest.mark.parametrize(("app", "bad"), [
    (App(exit_code=0), True),
    (App(exit_code=0, crash_after_ms=400_000), False),
    (App(crash_after_ms=None), False),
    (App(), True),
])
def test_the_kit_judges_as_the_simulator_does(app: App, bad: bool):
    """The kit's World.bad (from the events) is the simulator's ground truth (from the states)."""
    w = world(app, horizon_s=600)
    assert w.bad is bad
    assert worlds.ground_truth(w.scenario(), w.seed) is bad
    crash = world(app, horizon_s=600, truth="crash")
    assert crash.bad is (app.exit_code != 0 and app.crash_after_ms is not None)
    assert worlds.ground_truth(crash.scenario(), crash.seed) is crash.bad


def test_compare_names_the_truth_in_text_and_json(capsys):
    """compare's header and --json say which truth judged the runs, with its rule."""
    assert main(["compare", "healthy-release", "--check", "count", "--set", "truth=crash"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # the header wraps
    assert "the release is good by the truth crash (bad if a machine of the release crashes" in text
    main(["compare", "healthy-release", "--check", "count", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["truth"] == "serves"
    assert doc["truth_rule"] == rule("serves", DEFAULT_WINDOW_S)
    assert "exits within 300 s" in doc["truth_rule"]


def test_an_unknown_truth_is_refused_with_its_field(capsys):
    """--set truth=nope: exit 2, one line naming the field and the choices."""
    assert main(["compare", "healthy-release", "--set", "truth=nope"]) == 2
    err = capsys.readouterr().err
    assert "truth" in err
    assert "'serves' or 'crash'" in err
    assert "Traceback" not in err


def test_the_junit_report_names_the_truth(tmp_path):
    """compare --junit: each case's system-out opens with the truth that judged its outcomes."""
    import xml.etree.ElementTree as ET  # noqa: PLC0415

    report = tmp_path / "r.xml"
    assert main(["compare", "healthy-release", "--check", "count", "--junit", str(report),
                 "--set", "truth=crash"]) == 0
    out = ET.parse(report).getroot().find("testsuite/testcase/system-out")
    assert out is not None
    assert out.text is not None
    assert out.text.startswith("judged by the truth crash (bad if a machine of the release crashes")
