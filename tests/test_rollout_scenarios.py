"""The shipped rollout scenarios reproduce the write-up: 502s fall to 0, the race shows up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from platform_testbed.checks.timing import check_timing
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config.scenario import BadInput
from platform_testbed.sim.rollout import RolloutResult, load, run
from platform_testbed.sim.rollout.config import rollouts_dir, shipped
from platform_testbed.sim.rollout.report import rollout_json

SEEDS = range(40)
Outcomes = dict[str, list[RolloutResult]]


@pytest.fixture(scope="module")
def outcomes() -> Outcomes:
    """Every shipped configuration run over the same seeds (shared: the runs are the slow part)."""
    return {name: [run(load(name), seed) for seed in SEEDS] for name in shipped()}


def test_three_configurations_are_shipped() -> None:
    """scenarios/rollouts/ holds original, intermediate and fixed."""
    assert list(shipped()) == ["fixed", "intermediate", "original"]


def test_fixed_has_zero_502_over_many_seeds(outcomes: Outcomes) -> None:
    """The fixed configuration never routes a request to a server that stopped listening."""
    assert [r.bad_gateway for r in outcomes["fixed"]] == [0] * len(SEEDS)


def test_original_has_502_on_every_seed(outcomes: Outcomes) -> None:
    """The original configuration produces 502s on every deploy."""
    assert min(r.bad_gateway for r in outcomes["original"]) > 0


def test_502s_fall_from_original_to_intermediate_to_fixed(outcomes: Outcomes) -> None:
    """Mean 502s per deploy fall original > intermediate > fixed = 0 (the 10 -> 6 -> 0 shape)."""
    mean = {k: sum(r.bad_gateway for r in v) / len(v) for k, v in outcomes.items()}
    assert mean["original"] > mean["intermediate"] > mean["fixed"] == 0
    assert mean["intermediate"] > 0


def test_watchdog_race_leaves_a_server_without_gateway_in_some_original_runs(
    outcomes: Outcomes,
) -> None:
    """Some original runs report success while a server runs without its gateway."""
    silent = [r for r in outcomes["original"] if r.silent_breakage]
    assert 0 < len(silent) < len(SEEDS)
    for r in silent:
        assert r.deploy_status == "succeeded"
        assert any(s.missing == ("gateway",) and s.drifted for s in r.servers)


def test_fixed_and_intermediate_never_break_silently(outcomes: Outcomes) -> None:
    """With the lock, 4 in a row, one compose source and verification: no missing component."""
    for name in ("fixed", "intermediate"):
        for r in outcomes[name]:
            assert not r.silent_breakage
            assert r.repairs_mid_deploy == 0
            assert r.deploy_status == "succeeded"
            assert all(s.missing == () for s in r.servers)


def test_original_watchdog_fires_during_every_deploy(outcomes: Outcomes) -> None:
    """Acting on one failed check, the watchdog repairs a draining server in every run."""
    assert all(r.repairs_mid_deploy > 0 for r in outcomes["original"])


def test_fixed_draining_503s_are_not_counted_as_502(outcomes: Outcomes) -> None:
    """A clean deploy has non-200s (the health endpoint's 503s) but no 502s."""
    for r in outcomes["fixed"]:
        assert r.draining_503 > 0
        assert r.non_200 == r.draining_503
        assert r.bad_gateway == 0


def test_verification_turns_silent_breakage_into_a_failed_deploy() -> None:
    """The original with verification on reports failure exactly where it broke silently."""
    plain = load("original")
    verified = load("original", ["deploy.verify=true"])
    for seed in SEEDS:
        before, after = run(plain, seed), run(verified, seed)
        assert after.bad_gateway == before.bad_gateway
        assert not after.silent_breakage
        assert (after.deploy_status == "failed") is before.silent_breakage
        if before.silent_breakage:
            assert "gateway" in after.deploy_reason


def test_one_published_compose_file_prevents_the_gateway_loss() -> None:
    """With one published source the watchdog still fires mid-deploy but restores all four."""
    scenario = load("original", ["compose.source='published'"])
    results = [run(scenario, seed) for seed in SEEDS]
    assert all(r.repairs_mid_deploy > 0 for r in results)
    assert not any(r.silent_breakage for r in results)


def test_timing_invariants_of_the_shipped_configurations() -> None:
    """Fixed holds every invariant; original and intermediate break the drain rule; all three
    hold the keep-alive rule at its defaults (server 75 s, nginx's; balancer 60 s, ALB's)."""
    verdicts = {name: [t.ok for t in check_timing(load(name).drain_timing())] for name in shipped()}
    assert verdicts == {
        "fixed": [True, True, True, True],
        "intermediate": [False, True, True, True],
        "original": [False, False, True, True],
    }


def test_a_server_keepalive_shorter_than_the_balancers_idle_timeout_breaks_lint_timing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Node.js's 5 s keep-alive behind ALB's 60 s: lint-timing exits 1 naming the rule and numbers."""
    text = (rollouts_dir() / "fixed.toml").read_text().replace("[fleet]", "[fleet]\nkeepalive_timeout_s = 5")
    path = tmp_path / "short-keepalive.toml"
    path.write_text(text)
    assert main(["lint-timing", str(path)]) == 1
    out = capsys.readouterr().out
    assert ("BROKEN: server keep-alive outlasts the balancer's idle timeout: keepalive_timeout_s > "
            "idle_timeout_s") in " ".join(out.split())
    assert "margin_s=-55" in out
    assert main(["lint-timing", str(path), "--json"]) == 1
    invariants = json.loads(capsys.readouterr().out)["invariants"]
    assert [i["ok"] for i in invariants] == [True, True, True, False]


def test_the_staggered_schedule_is_an_option_the_default_leaves_alone() -> None:
    """Default: random phases, the runs as before (the goldens); staggered: other runs, as
    deterministic, and original still loses requests in every run, fixed in none."""
    assert load("original").balancer.check_schedule == "random"
    staggered = load("original", ["balancer.check_schedule='staggered'"])
    a = [run(staggered, seed).bad_gateway for seed in SEEDS]
    assert a == [run(staggered, seed).bad_gateway for seed in SEEDS]
    assert a != [run(load("original"), seed).bad_gateway for seed in SEEDS]
    assert all(n > 0 for n in a)
    fixed = load("fixed", ["balancer.check_schedule='staggered'", "balancer.spread_checks_pct=5"])
    assert all(run(fixed, seed).bad_gateway == 0 for seed in SEEDS)


@pytest.mark.parametrize(("override", "message"), [
    ("balancer.check_schedule='haproxy'",
     r"balancer\.check_schedule: input should be 'random' or 'staggered'"),
    ("balancer.spread_checks_pct=51",
     r"balancer\.spread_checks_pct: input should be less than or equal to 50"),
    ("balancer.idle_timeout_s=0", r"balancer\.idle_timeout_s: input should be greater than 0"),
    ("fleet.keepalive_timeout_s=-1", r"fleet\.keepalive_timeout_s: input should be greater than 0"),
])
def test_the_new_balancer_and_fleet_fields_refuse_bad_values(override: str, message: str) -> None:
    """One line naming the field and its rule (BadInput), before any run."""
    with pytest.raises(BadInput, match=message):
        load("fixed", [override])


def test_same_seed_gives_byte_identical_json() -> None:
    """Two runs of one scenario with one seed serialise to the same bytes."""
    scenario = load("original")

    def dump(seed: int) -> str:
        results = [run(scenario, seed), run(scenario, seed + 1)]
        timing = check_timing(scenario.drain_timing())
        return json.dumps(rollout_json(scenario, results, timing))

    assert dump(7) == dump(7)
    assert dump(7) != dump(8)


def test_unknown_rollout_scenario_is_bad_input() -> None:
    """An unknown name raises BadInput listing the shipped ones."""
    with pytest.raises(BadInput, match="shipped: fixed, intermediate, original"):
        load("nope")


def test_out_of_range_override_names_field_and_rule() -> None:
    """A --set value out of range raises BadInput naming the field path."""
    with pytest.raises(BadInput, match=r"balancer\.interval_s: must be at least 0\.1 s"):
        load("fixed", ["balancer.interval_s=0"])
    with pytest.raises(BadInput, match=r"deploy\.start_max_s: .*at least start_min_s"):
        load("fixed", ["deploy.start_max_s=1"])


def test_a_grace_period_shorter_than_the_drain_brings_502s_back() -> None:
    """Breaking only the grace rule: the kill cuts the drain short and 502s return."""
    scenario = load("fixed", ["deploy.stop_grace_period_s=5"])
    verdicts = [t.ok for t in check_timing(scenario.drain_timing())]
    assert verdicts == [True, True, False, True]
    results = [run(scenario, seed) for seed in range(10)]
    assert sum(r.bad_gateway for r in results) > 0
    assert all(s.force_killed for r in results for s in r.servers)


def test_a_shutdown_overrunning_the_grace_period_is_killed_without_502s() -> None:
    """A kill after the balancer stopped routing costs no 502 but is reported as forced."""
    scenario = load("fixed", ["deploy.shutdown_s=20"])
    results = [run(scenario, seed) for seed in range(10)]
    assert all(r.bad_gateway == 0 for r in results)
    assert all(s.force_killed for r in results for s in r.servers)
