"""``sim.api``: the Python front door gives what the functions it gathers give."""

from __future__ import annotations

import json
import re

import pytest

from platform_testbed.checks import BUILTIN_CHECKS, Verdict, Wait
from platform_testbed.checks.timing import check_timing
from platform_testbed.sim import api
from platform_testbed.sim.checkload.loader import load_checks
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.hunt import search
from platform_testbed.sim.publish.world import run as world_run
from platform_testbed.sim.rollout import world as rollout_world
from platform_testbed.sim.sweep import load_sweep, run_sweep

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


def test_rollout_runs_each_seed_through_the_rollout_world():
    """api.rollout's runs are sim.rollout.world.run of the loaded scenario, seed by seed."""
    scenario = api.load_rollout("original")
    result = api.rollout("original", seeds=[3, 1])
    assert result.runs == (rollout_world.run(scenario, 3), rollout_world.run(scenario, 1))
    assert result.seeds == (3, 1)
    assert result.timing == tuple(check_timing(scenario.drain_timing(), scenario.timing.max_reheal_s))


def test_rollout_to_json_is_testbed_rollout_json_of_the_same_seeds(capsys):
    """seeds=range(S, S + N) is ``testbed rollout --seed S --runs N``: the same --json document."""
    assert main(["rollout", "original", "--seed", "2", "--runs", "3", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert api.rollout("original", seeds=range(2, 5)).to_json() == printed


def test_rollout_defaults_to_the_scenarios_own_seed_and_takes_set_overrides():
    """No seeds: the scenario's ``seed``; load_rollout applies ``--set`` values."""
    scenario = api.load_rollout("fixed", ["deploy.serve_after_drain_s=4", "seed=7"])
    assert scenario.deploy.serve_after_drain_s == 4
    assert api.rollout(scenario).seeds == (7,)


def test_a_missed_rollout_expectation_is_reported_where_the_command_line_exits_1(capsys):
    """expectations_failed holds what makes ``testbed rollout`` exit 1, and only that."""
    sets = ["expect.bad_gateway=zero"]  # the original deploy has 502s in every run
    assert main(["rollout", "original", "--runs", "2", "--json", *[f"--set={s}" for s in sets]]) == 1
    printed = json.loads(capsys.readouterr().out)
    failed = api.rollout(api.load_rollout("original", sets), seeds=range(2)).expectations_failed
    assert [e.field for e in failed] == [e["field"] for e in printed["expect"] if not e["held"]]
    assert [e.field for e in failed] == ["bad_gateway"]
    assert api.rollout("original", seeds=range(2)).expectations_failed == ()


def test_hunt_finds_what_testbed_hunt_finds_with_the_same_seed_and_budget(tmp_path, capsys):
    """api.hunt of a spec: the worlds, kinds and counts of ``testbed hunt --json``."""
    code = main(["hunt", "--check", "timestamp", "--budget", "8", "--seed", "3",
                 "--out", str(tmp_path), "--json", "--no-progress"])
    printed = json.loads(capsys.readouterr().out)
    result = api.hunt("timestamp", budget=8, seed=3)
    assert code == (1 if result.found else 0)
    assert (result.check, result.worlds_tried, result.rounds) == (
        printed["check"], printed["worlds_tried"], printed["rounds"])
    assert [(f.outcome, f.diagnosis, f.why, f.reason, f.decided_at_s) for f in result.found] == [
        (f["outcome"], f["kind"], f["why"], f["reason"], f["decided_at_s"]) for f in printed["found"]]


def test_hunt_builds_a_spec_with_each_worlds_check_options():
    """A spec hunts as a factory that builds it from the world's [check] table does."""
    base = api.load_scenario(SEPT25)
    by_hand = search.hunt(base, "count", lambda options: load_checks(["count"], options)[0],
                          budget=5, seed=1)
    assert api.hunt("count", base, budget=5, seed=1) == by_hand


def test_hunt_runs_a_check_object_as_it_is_in_every_world():
    """An object is the check of every world: as a factory that always returns it."""
    check = _FirstLook()
    seen = []

    def factory(options):
        seen.append(dict(options))
        return check

    assert api.hunt(check, budget=5) == api.hunt(factory, budget=5)
    assert len({tuple(sorted(o.items())) for o in seen}) > 1  # the worlds' options did vary
    assert api.hunt(check, budget=5).check == "first-look"


@pytest.mark.parametrize(("call", "message"), [
    (lambda: api.load_scenario("no-such-world"), "no-such-world"),
    (lambda: api.sweep({"scenario": SEPT25}, every=0), "every: must be a whole number, 1 or more (got 0)"),
    (lambda: api.sweep({"scenario": SEPT25}, workers=0),
     "workers: must be a whole number, 1 or more (got 0)"),
    (lambda: api.run(SEPT25, "no-such-check"), "no-such-check"),
    (lambda: api.rollout("no-such-deploy"), "unknown rollout scenario 'no-such-deploy'"),
    (lambda: api.rollout("fixed", seeds=[]), "seeds: give at least one seed"),
    (lambda: api.rollout("fixed", seeds=[0, -1]),
     "seeds: each must be a whole number from 0 to 2**63 - 1 (got -1)"),
    (lambda: api.rollout("fixed", seeds=[1.5]),
     "seeds: each must be a whole number from 0 to 2**63 - 1 (got 1.5)"),
    (lambda: api.load_rollout("fixed", ["fleet.servers=0"]), "fleet.servers"),
    (lambda: api.hunt("timestamp", budget=0), "budget: must be a whole number, from 1 to 100,000 (got 0)"),
    (lambda: api.hunt("timestamp", seed=-1), "seed: must be a whole number from 0 to 2**63 - 1 (got -1)"),
    (lambda: api.hunt("no-such-check", budget=1), "no-such-check"),
    (lambda: api.hunt(42, budget=1), "check: a spec, a check (with next()) or a factory"),
])
def test_bad_input_is_one_line_naming_what_was_wrong(call, message):
    """Bad input raises BadInput with the command line's one-line message."""
    with pytest.raises(api.BadInput, match=re.escape(message)) as raised:
        call()
    assert "\n" not in str(raised.value)


# The seed rule of sim.config.settings.seed_value: a whole number (not a bool) from 0 to MAX_SEED,
# the largest a to_pandas() table's Int64 seed column holds.
SEED_RULE = "must be a whole number from 0 to 2**63 - 1"
NO_SUCH = "no-such-world"  # a scenario that does not load: bad arguments are judged first


@pytest.mark.parametrize("seed", ["1", -1, 1.5, True, 2**80, api.MAX_SEED + 1])
@pytest.mark.parametrize(("call", "field"), [
    (lambda seed: api.run(NO_SUCH, "count", seed=seed), "seed"),
    (lambda seed: api.hunt("count", NO_SUCH, budget=1, seed=seed), "seed"),
    (lambda seed: api.compare(NO_SUCH, ["count"], seeds=[0, seed]), "seeds"),
    (lambda seed: api.rollout("no-such-deploy", seeds=[seed]), "seeds"),
])
def test_a_seed_that_is_not_a_whole_number_in_range_is_refused_before_any_work(call, field, seed):
    """Each seed the CLI's --seed would refuse, or that the tables cannot hold, names its parameter."""
    each = "each " if field == "seeds" else ""
    with pytest.raises(api.BadInput, match=re.escape(f"{field}: {each}{SEED_RULE} (got {seed!r})")):
        call(seed)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: api.compare(NO_SUCH, ["count"], seeds=[]), "seeds: give at least one seed"),
    (lambda: api.rollout("no-such-deploy", seeds=[]), "seeds: give at least one seed"),
    (lambda: api.compare(NO_SUCH, ["count"], seeds=5), "seeds: give the seeds as a list or range, e.g. [5]"),
    (lambda: api.rollout("no-such-deploy", seeds=5), "seeds: give the seeds as a list or range, e.g. [5]"),
    (lambda: api.compare(NO_SUCH, ["count"], seeds="01"), "seeds: give the seeds as a list or range"),
    (lambda: api.compare(NO_SUCH, ["count"], seeds=range(10**9)),
     "seeds: must be at most 1,000,000 (got 1,000,000,000); set TESTBED_MAX_RUNS"),
    (lambda: api.run(NO_SUCH, 42),
     "check: must be a spec such as 'count' or a check object with a next() method (got 42)"),
    (lambda: api.run(NO_SUCH, None), "check: must be a spec such as 'count' or a check object"),
    (lambda: api.run(NO_SUCH, _FirstLook), "check: must be a spec"),  # the class, not a check
    (lambda: api.compare(NO_SUCH, [None]), "checks: each must be a spec such as 'count' or a check object "
     "with a next() method (got None)"),
    (lambda: api.compare(NO_SUCH, ["count", 42]), "checks: each must be a spec"),
    (lambda: api.compare(NO_SUCH, None), "checks: give a list of checks"),
    (lambda: api.build(NO_SUCH, [3.5]), "checks: each must be a spec"),
    (lambda: api.load_scenario(NO_SUCH, [1]), "sets: each must be a KEY=VALUE string, e.g. 'seed=7' (got 1)"),
    (lambda: api.load_scenario(NO_SUCH, 7), "sets: give KEY=VALUE strings"),
    (lambda: api.load_rollout("no-such-deploy", [None]), "sets: each must be a KEY=VALUE string"),
    (lambda: api.hunt("count", NO_SUCH, budget="8"),
     "budget: must be a whole number, from 1 to 100,000 (got '8')"),
    (lambda: api.sweep(NO_SUCH, every=2.0), "every: must be a whole number, 1 or more (got 2.0)"),
    (lambda: api.sweep(NO_SUCH, workers="2"), "workers: must be a whole number, 1 or more (got '2')"),
])
def test_bad_arguments_are_refused_before_the_scenario_loads(call, message):
    """Each bad argument is one line naming the parameter (not a flag), before any loading."""
    with pytest.raises(api.BadInput, match=re.escape(message)) as raised:
        call()
    assert "\n" not in str(raised.value)
    assert NO_SUCH not in str(raised.value)  # the scenario was never looked up


def test_seeds_take_numpy_integers_and_the_largest_seed():
    """Whole numbers of any integer type count, up to MAX_SEED, which a table's Int64 holds."""
    np = pytest.importorskip("numpy")
    result = api.compare(SEPT25, "count", seeds=np.arange(2))
    assert [run.seed for run in result.seeds] == [0, 1]
    assert api.run(SEPT25, "count", seed=api.MAX_SEED).seed == 2**63 - 1


def test_a_single_spec_or_set_string_is_a_list_of_one():
    """checks="count" is ["count"] and sets="seed=7" is ["seed=7"], never read letter by letter."""
    assert api.compare(SEPT25, "count") == api.compare(SEPT25, ["count"])
    assert api.build(SEPT25, "count")[0].name == "count"
    assert api.load_scenario(SEPT25, "platform.event_log_cap=3") == api.load_scenario(
        SEPT25, ["platform.event_log_cap=3"])
    assert api.load_rollout("fixed", "seed=7").seed == 7
    one = _FirstLook()
    assert api.compare(SEPT25, one).checks == ("first-look",)
