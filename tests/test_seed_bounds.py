"""No door lets a seed past MAX_SEED (2**63 - 1) in: not a file's seed, not ``--seed S --runs N``.

Each refusal is exit 2 (BadInput in Python) with one line naming the field and the rule,
and comes before any world runs: the run functions are replaced by ones that fail the
test if they are reached. The largest seed itself still runs (the bound is not off by one).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from platform_testbed.sim import api
from platform_testbed.sim.cli import commands, rollout, sweep
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config.settings import MAX_SEED, BadInput, seed_range

RULE = "must be a whole number from 0 to 2**63 - 1"
OVER = MAX_SEED + 1
RULE_RE = re.escape(RULE)


def _last(first: int, count: int) -> str:
    return (f"the last seed ({first} + {count} - 1 = {first + count - 1}) must be at most "
            "2**63 - 1; lower the first seed or the count")


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Running a world, a rollout or a sweep fails the test: refusals come before any work."""
    def reached(*_: Any, **__: Any) -> Any:
        raise AssertionError("work started before the seeds were judged")

    monkeypatch.setattr(commands, "compare", reached)
    monkeypatch.setattr(rollout, "run_rollout", reached)
    monkeypatch.setattr(sweep, "run_sweep", reached)
    monkeypatch.setattr(api, "_compare", reached)
    monkeypatch.setattr(api, "run_rollout", reached)
    monkeypatch.setattr(api, "run_sweep", reached)


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err.strip()


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_seed_range_ends_at_max_seed_and_refuses_one_more():
    """The rule itself: MAX_SEED is the last seed allowed, MAX_SEED + 1 is refused."""
    assert seed_range("--runs", MAX_SEED - 2, 3) == range(MAX_SEED - 2, OVER)
    with pytest.raises(BadInput, match=r"^--runs: the last seed \(9223372036854775806 \+ 3 - 1"):
        seed_range("--runs", MAX_SEED - 1, 3)


# ---- the command line -----------------------------------------------------------------------

@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("command", [["compare", "sept25-crash-loop"], ["rollout", "original"]])
def test_seed_and_runs_past_max_seed_are_refused(capsys, command):
    """--seed S --runs N whose last seed passes MAX_SEED: exit 2 naming --runs and the rule."""
    err = _refused(capsys, [*command, "--seed", str(MAX_SEED - 1), "--runs", "3"])
    assert err == f"testbed: --runs: {_last(MAX_SEED - 1, 3)}"


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("command", [["compare", "sept25-crash-loop"], ["rollout", "original"]])
def test_a_seed_past_max_seed_is_refused(capsys, command):
    """--seed 2**63: exit 2 naming --seed and the rule."""
    assert _refused(capsys, [*command, "--seed", str(OVER)]) == (
        f"testbed: --seed: {RULE} (got {OVER})")


def test_a_files_seed_plus_runs_past_max_seed_is_refused(capsys, tmp_path, no_work):
    """A scenario file's own seed counts as --seed: MAX_SEED with --runs 2 is refused."""
    path = _write(tmp_path, "edge.toml", f'name = "edge"\nseed = {MAX_SEED}\n')
    assert _refused(capsys, ["compare", path, "--runs", "2"]) == (
        f"testbed: --runs: {_last(MAX_SEED, 2)}")


def test_the_largest_seed_still_runs(capsys, tmp_path):
    """seed = MAX_SEED in a file, and --seed MAX_SEED --runs 1, run (exit 0 or 1, not 2)."""
    path = _write(tmp_path, "edge.toml", f'name = "edge"\nseed = {MAX_SEED}\n')
    assert main(["compare", path, "--check", "count", "--json"]) in (0, 1)
    assert f'"seed":{MAX_SEED}' in capsys.readouterr().out
    assert main(["rollout", "fixed", "--seed", str(MAX_SEED), "--runs", "1", "--json"]) in (0, 1)
    assert str(MAX_SEED) in capsys.readouterr().out


# ---- the files ------------------------------------------------------------------------------

SWEEP = 'scenario = "sept25-crash-loop"\nchecks = ["count"]\n'
SERIES = '[[publishes]]\nlabel = "one"\nscenario = "sept25-crash-loop"\nseed = {seed}\n'
ROLLOUT = Path(__file__).resolve().parent.parent / "scenarios" / "rollouts" / "fixed.toml"


def _files(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """Each file door with a seed past MAX_SEED: the command, and the line it must print."""
    rollout_text = ROLLOUT.read_text().replace('name = "fixed"', 'name = "big"')
    rollout_text = "\n".join(line for line in rollout_text.splitlines()
                             if not line.startswith("seed ="))
    # A table follows the top-level keys: the seed goes first, at the top level.
    rollout_file = _write(tmp_path, "big-rollout.toml", f"seed = {OVER}\n{rollout_text}\n")
    return {
        "scenario": (["compare", _write(tmp_path, "big.toml", f'name = "big"\nseed = {OVER}\n')],
                     f"testbed: big.toml: seed: {RULE} (got {OVER})"),
        "rollout": (["rollout", rollout_file],
                    f"testbed: big-rollout.toml: seed: {RULE} (got {OVER})"),
        "series": (["series", _write(tmp_path, "big-series.toml", SERIES.format(seed=OVER))],
                   f"testbed: big-series.toml: publishes.0.seed: {RULE} (got {OVER})"),
        "sweep first_seed": (
            ["sweep", _write(tmp_path, "s1.toml", f"{SWEEP}seeds = 1\nfirst_seed = {OVER}\n")],
            f"testbed: s1.toml: first_seed: {RULE} (got {OVER})"),
        "sweep seeds list": (
            ["sweep", _write(tmp_path, "s2.toml", f"{SWEEP}seeds = [1, {OVER}]\n")],
            "testbed: s2.toml: seeds: a seed list must be non-empty, each seed a whole number "
            f"from 0 to 2**63 - 1 (got [1, {OVER}])"),
        "sweep count": (
            ["sweep", _write(tmp_path, "s3.toml",
                             f"{SWEEP}seeds = 3\nfirst_seed = {MAX_SEED - 1}\n")],
            f"testbed: seeds: {_last(MAX_SEED - 1, 3)}"),
    }


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("door", ["scenario", "rollout", "series", "sweep first_seed",
                                  "sweep seeds list", "sweep count"])
def test_a_files_seed_past_max_seed_is_refused(capsys, tmp_path, door):
    """Each file's seed field refuses 2**63 with one line naming the field and the rule."""
    argv, line = _files(tmp_path)[door]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    if argv[0] == "sweep":
        argv = [*argv, "--out", str(out_dir / "rows.csv")]
    assert _refused(capsys, argv) == line
    assert list(out_dir.iterdir()) == []


# ---- the Python API -------------------------------------------------------------------------

@pytest.mark.usefixtures("no_work")
def test_the_api_refuses_the_same_seeds(tmp_path):
    """api.compare, api.rollout, api.sweep and api.load_scenario: BadInput, the same rules."""
    files = {door: argv[-1] for door, (argv, _) in _files(tmp_path).items()}
    with pytest.raises(BadInput, match=rf"^big\.toml: seed: {RULE_RE}"):
        api.compare(files["scenario"], "count")
    with pytest.raises(BadInput, match=rf"^big\.toml: seed: {RULE_RE}"):
        api.load_scenario(files["scenario"])
    with pytest.raises(BadInput, match=rf"^big-rollout\.toml: seed: {RULE_RE}"):
        api.rollout(files["rollout"])
    with pytest.raises(BadInput, match=rf"^s1\.toml: first_seed: {RULE_RE}"):
        api.sweep(files["sweep first_seed"])
    with pytest.raises(BadInput, match=r"^seeds: the last seed \(9223372036854775806 \+ 3 - 1"):
        api.sweep({"scenario": "sept25-crash-loop", "checks": ["count"], "seeds": 3,
                   "first_seed": MAX_SEED - 1})
    with pytest.raises(BadInput, match=rf"^seeds: each {RULE_RE}"):
        api.compare("sept25-crash-loop", "count", seeds=range(MAX_SEED - 1, MAX_SEED + 2))
    with pytest.raises(BadInput, match=rf"^seeds: each {RULE_RE}"):
        api.rollout("fixed", seeds=[MAX_SEED, OVER])
