"""``sim.api``: the Python front door gives what the functions it gathers give."""

from __future__ import annotations

import re

import pytest

from checks import BUILTIN_CHECKS, Verdict, Wait
from sim import api
from sim.loader import load_checks
from sim.publish.world import run as world_run
from sim.sweep import load_sweep, run_sweep

SEPT25 = "sept25-crash-loop"


class _FirstLook:
    """A check that passes at its first look (a plain object, not a spec)."""

    name = "first-look"

    def next(self, publish_started_ms, looks):
        return Verdict(True, "looked once") if looks else Wait(1.0)


def test_run_is_the_world_run_of_the_check_built_from_the_scenario():
    """api.run by name equals sim.publish.world.run with the check the loader builds."""
    scenario = api.load_scenario(SEPT25)
    [count] = load_checks(["count"], scenario.check)
    assert api.run(SEPT25, "count", 3) == world_run(scenario, 3, count)


def test_run_defaults_to_the_scenarios_own_seed():
    """No seed: the scenario's ``seed`` (1 for the incident), as on the command line."""
    scenario = api.load_scenario(SEPT25)
    assert api.run(scenario, "timestamp").seed == scenario.seed == 1


def test_compare_defaults_to_every_built_in_check_in_the_scenarios_world():
    """No checks: every built-in, in registry order; no seeds: the scenario's own."""
    result = api.compare(SEPT25)
    assert result.checks == tuple(BUILTIN_CHECKS)
    assert [run.seed for run in result.seeds] == [1]
    assert [s.name for s in result.setups] == list(BUILTIN_CHECKS)


def test_compare_keeps_the_order_of_specs_and_objects_and_sets_up_only_specs():
    """A check object runs as given, between the specs, in the order asked."""
    result = api.compare(SEPT25, ["timestamp", _FirstLook(), "count"], seeds=[0, 1])
    assert result.checks == ("timestamp", "first-look", "count")
    assert [s.name for s in result.setups] == ["timestamp", "count"]
    assert result.summary["first-look"].missed == 2  # one early look passes the crash loop


def test_options_reach_the_checks_as_check_opt_values():
    """options={"count.look_delay_s": 5} sets that option of count only, from --check-opt."""
    result = api.compare(SEPT25, ["count", "timestamp"], options={"count.look_delay_s": 5})
    by_check = {s.name: {o.key: (o.value, o.source) for o in s.options} for s in result.setups}
    assert by_check["count"]["look_delay_s"] == (5.0, "--check-opt")
    assert by_check["timestamp"]["look_delay_s"] == (10.0, "scenario")


def test_a_sweep_given_as_tables_runs_as_the_same_sweep_file_does(tmp_path, monkeypatch):
    """The mapping form and the file form of one sweep give the same rows and summary."""
    tables = {"scenario": SEPT25, "checks": ["count", "timestamp"], "seeds": 2,
              "axes": {"platform.event_log_cap": [2, 10]}}
    path = tmp_path / "caps.toml"
    path.write_text('scenario = "sept25-crash-loop"\nchecks = ["count", "timestamp"]\nseeds = 2\n'
                    '[axes]\n"platform.event_log_cap" = [2, 10]\n', encoding="utf-8")
    from_file = run_sweep(load_sweep(path), workers=1)
    monkeypatch.chdir(tmp_path)
    from_tables = api.sweep(tables)
    assert list(from_tables.rows) == from_file.rows
    assert from_tables.summary.checks == from_file.summary.checks


def test_every_keeps_every_nth_value_of_each_axis():
    """every=2 runs the thinned sweep, as ``testbed sweep``'s quick look does."""
    tables = {"scenario": SEPT25, "checks": ["count"], "axes": {"platform.event_log_cap": [1, 2, 5]}}
    result = api.sweep(tables, every=2)
    assert [row["platform.event_log_cap"] for row in result.rows] == [1, 5]


@pytest.mark.parametrize(("call", "message"), [
    (lambda: api.load_scenario("no-such-world"), "no-such-world"),
    (lambda: api.sweep({"scenario": SEPT25}, every=0), "every: must be 1 or more (got 0)"),
    (lambda: api.sweep({"scenario": SEPT25}, workers=0), "workers: must be 1 or more (got 0)"),
    (lambda: api.run(SEPT25, "no-such-check"), "no-such-check"),
])
def test_bad_input_is_one_line_naming_what_was_wrong(call, message):
    """Bad input raises BadInput with the command line's one-line message."""
    with pytest.raises(api.BadInput, match=re.escape(message)) as raised:
        call()
    assert "\n" not in str(raised.value)
