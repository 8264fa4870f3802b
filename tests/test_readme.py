"""Every figure of the README and of docs/ marked as a command's output is what that command prints now.

The blocks and figures live on whichever page tells their story (the README is the front page;
docs/sept25.md, docs/checks.md, ... the rest): each test finds them across all pages, so a
figure moved between pages keeps its test, and one said twice (or nowhere) fails."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config.profiles import PROFILES
from tests.doc_blocks import PAGES, ROOT, output_blocks, page_name

README = ROOT / "README.md"
#: The command outputs the pages showed when the README was split into the site (issue 31): nine.
SHOWN_OUTPUTS = 9


@pytest.fixture(autouse=True)
def _in_a_fresh_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command runs where a reader's would, not in the checkout: a sweep's default rows
    land in this test's folder, never in the repository (where parallel tests would share them)."""
    monkeypatch.chdir(tmp_path)


BLOCKS = output_blocks()


def test_the_pages_mark_their_command_outputs():
    """The pages' result blocks are marked (none lost in a move), and the front page shows one."""
    assert len(BLOCKS) >= SHOWN_OUTPUTS
    assert any(page == README for page, _, _ in BLOCKS)


@pytest.mark.parametrize(("page", "command", "shown"), BLOCKS,
                         ids=[f"{page_name(p)}: {c}" for p, c, _ in BLOCKS])
def test_readme_output_matches_its_command(page: Path, command: str, shown: str, capsys):
    """The block under `<!-- output: testbed … -->`, on any page, is the command's stdout today."""
    main(shlex.split(command))
    printed = capsys.readouterr().out
    fenced = shown.startswith("```")
    body = shown.removeprefix("```\n").removesuffix("```\n") if fenced else shown
    assert body.strip() == printed.strip()


CAP_ROW = re.compile(r"^\| (\d+) +\| (\d+) (\w+) \| (\d+) (\w+) \|$", re.M)


def _site() -> str:
    return "\n".join(page.read_text(encoding="utf-8") for page in PAGES)


def test_readme_cap_table_matches_the_simulator(capsys):
    """The cap table's outcome counts are what --set platform.event_log_cap=N gives over 100 seeds."""
    rows = CAP_ROW.findall(_site())
    assert len(rows) >= 4
    for cap, count_n, count_outcome, ts_n, ts_outcome in rows:
        main(["compare", "sept25-crash-loop", "--runs", "100", "--seed", "0", "--check", "count",
              "--check", "timestamp", "--set", f"platform.event_log_cap={cap}", "--json"])
        summary = json.loads(capsys.readouterr().out)["summary"]
        assert {k: n for k, n in summary["count"].items() if n} == {count_outcome: int(count_n)}, cap
        assert {k: n for k, n in summary["timestamp"].items() if n} == {ts_outcome: int(ts_n)}, cap


LINK = re.compile(r"\]\(([^)#\s]+)\)")
DOCS = list(PAGES)


@pytest.mark.parametrize("doc", DOCS, ids=[page_name(d) for d in DOCS])
def test_docs_point_inside_the_repository(doc: Path):
    """No README or doc points at a folder outside the repository (../shared was one)."""
    text = doc.read_text(encoding="utf-8")
    assert "../shared" not in text
    for target in LINK.findall(text):
        if "://" in target:
            continue
        path = (doc.parent / target).resolve()
        assert path.is_relative_to(README.parent.resolve()), target
        assert path.exists(), target


def test_the_readme_links_both_incident_write_ups():
    """The two incidents the testbed exists for are summarised in docs/incidents/ and linked."""
    text = README.read_text(encoding="utf-8")
    for name in ("crash-loop-publish.md", "zero-502-deploys.md"):
        assert (README.parent / "docs" / "incidents" / name).is_file()
        assert f"](docs/incidents/{name})" in text


# --- the sample scenario and the figures quoted in prose or tables, each against its command ---

TEXT = _site()


def _quoted(pattern: str) -> tuple[str, ...]:
    """The groups of the one place in the pages that ``pattern`` matches (prose may wrap)."""
    found = [(page, hit) for page in PAGES
             for hit in re.findall(pattern.replace(" ", r"\s+"), page.read_text(encoding="utf-8"), re.S)]
    where = [page_name(p) for p, _ in found]
    assert len(found) == 1, f"the pages should say this once, not in {where}: {pattern}"
    hit = found[0][1]
    return hit if isinstance(hit, tuple) else (hit,)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def test_the_sample_scenario_holds_its_own_expectations(tmp_path: Path, capsys):
    """The TOML of docs/scenarios.md, saved as printed, passes its [expect] (exit 0) over 10 seeds."""
    body = re.search(r"```toml\n(.*?)```", (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8"), re.S)
    assert body is not None
    (tmp_path / "my-world.toml").write_text(body.group(1), encoding="utf-8")
    assert main(["compare", "my-world.toml"]) == 0
    assert "expectations held: count missed, timestamp caught" in capsys.readouterr().out
    assert main(["compare", "my-world.toml", "--runs", "10", "--summary"]) == 0


def _rollout(name: str, capsys) -> dict:
    main(["rollout", name, "--runs", "100", "--seed", "0", "--json"])
    return json.loads(capsys.readouterr().out)


ROLLOUT_ROW = re.compile(
    r"^\| (original|intermediate|fixed) \| ([\d.]+) \((\d+)–(\d+)\) \| (\d+)/100 \| (\d+)/100 \|$", re.M
)


def test_the_zero_502_table_is_what_the_rollouts_print(capsys):
    """Each simulated row (502s mean, min–max, runs with any, silent breakage) is what
    `rollout NAME --runs 100 --seed 0` gives."""
    rows = ROLLOUT_ROW.findall(TEXT)
    assert [r[0] for r in rows] == ["original", "intermediate", "fixed"]
    for name, mean, low, high, with_any, silent in rows:
        summary = _rollout(name, capsys)["summary"]
        assert float(mean) == round(summary["bad_gateway_mean"], 2), name
        assert (int(low), int(high)) == (summary["bad_gateway_min"], summary["bad_gateway_max"]), name
        assert int(with_any) == summary["runs_with_bad_gateway"], name
        assert int(silent) == summary["silent_breakage_runs"], name


def test_the_fixed_deploys_non_200_share_is_all_drain(capsys):
    """"The fixed deploy still shows X % non-200": the mean per-run share, every one a draining 503."""
    (share,) = _quoted(r"The fixed deploy still shows ([\d.]+) % non-200")
    runs = _rollout("fixed", capsys)["runs"]
    assert float(share) == round(100 * sum(r["non_200_rate"] for r in runs) / len(runs), 1)
    assert all(r["non_200"] == r["draining_503"] and r["bad_gateway"] == 0 for r in runs)


def test_the_crash_period_sweep_miss_rates(tmp_path: Path, capsys):
    """"Miss rates: count X %, timestamp Y %" is what the crash-period sweep's summary says."""
    count, timestamp = _quoted(r"Miss rates: count ([\d.]+) %, timestamp ([\d.]+) %")
    main(["sweep", "crash-period-vs-look-delay", "--json", "--no-progress", "--out", str(tmp_path / "r.csv")])
    checks = json.loads(capsys.readouterr().out)["checks"]
    assert float(count) == round(100 * checks["count"]["miss_rate"], 1)
    assert float(timestamp) == round(100 * checks["timestamp"]["miss_rate"], 1)


@pytest.fixture(scope="module")
def unknowns(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, str]]:
    """The rows of the shipped sept25-unknowns sweep, run once for the map's figures."""
    out = tmp_path_factory.mktemp("unknowns") / "rows.csv"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["sweep", "sept25-unknowns", "--no-progress", "--out", str(out)]) == 0
    with out.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


Row = dict[str, str]


def _missed(rows: list[Row], check: str, where: Callable[[Row], bool]) -> tuple[int, int]:
    chosen = [r for r in rows if r["check"] == check and where(r)]
    return sum(r["outcome"] == "missed" for r in chosen), len(chosen)


def _fast(r: dict[str, str]) -> bool:
    return float(r["platform.restart_delay_s"]) <= 1 and float(r["platform.boot_s"]) <= 1


def test_the_unknowns_map_figures_for_count(unknowns):
    """Where count misses across the unknowns: fast vs slow restarts, cap 20, and 10 s restarts."""
    fast, fast_of, slow, slow_of, cap20, cap20_of = _quoted(
        r"count check misses in ([\d,]+) of the ([\d,]+) worlds with restart delay and boot of 1 s or "
        r"less, in ([\d,]+) of the ([\d,]+) slower ones, and in ([\d,]+) of ([\d,]+) with a cap of 20")
    assert _missed(unknowns, "count", _fast) == (_number(fast), _number(fast_of))
    assert _missed(unknowns, "count", lambda r: not _fast(r)) == (_number(slow), _number(slow_of))
    assert _missed(unknowns, "count", lambda r: r["platform.event_log_cap"] == "20") == (
        _number(cap20), _number(cap20_of))
    slow10, slow10_of = _quoted(r"delay of 10 s the count check missed ([\d,]+) of ([\d,]+) worlds")
    assert _missed(unknowns, "count", lambda r: r["platform.restart_delay_s"] == "10.0") == (
        _number(slow10), _number(slow10_of))


def test_the_unknowns_map_figures_where_the_checks_disagree(unknowns):
    """"In N worlds count misses while timestamp catches"; and the timestamp fix against the cap."""
    (disagree,) = _quoted(r"In ([\d,]+) worlds count misses while timestamp catches")
    by_world: dict[tuple[str, str], dict[str, str]] = {}
    for r in unknowns:
        by_world.setdefault((r["point"], r["seed"]), {})[r["check"]] = r["outcome"]
    both = {"count": "missed", "timestamp": "caught"}
    assert sum(w == both for w in by_world.values()) == _number(disagree)
    kept, kept_of, short, short_of = _quoted(
        r"missed ([\d,]+) of the ([\d,]+) worlds whose cap is at least the events one crash-and-restart "
        r"writes under their profile .*? and ([\d,]+) of the ([\d,]+) whose cap is smaller")
    per_crash = {p.name: p.per_crash for p in PROFILES.values()}

    def holds_a_cycle(r: dict[str, str]) -> bool:
        return int(r["platform.event_log_cap"]) >= per_crash[r["platform.events"]]

    assert _missed(unknowns, "timestamp", holds_a_cycle) == (_number(kept), _number(kept_of))
    assert _missed(unknowns, "timestamp", lambda r: not holds_a_cycle(r)) == (
        _number(short), _number(short_of))


def test_the_headline_over_100_seeds(capsys):
    """The front page's "count misses all N and timestamp catches all N" is what its command gives."""
    misses, catches = _quoted(r"count misses all (\d+) and timestamp catches all (\d+)")
    main(["compare", "sept25-crash-loop", "--check", "count", "--check", "timestamp",
          "--runs", "100", "--seed", "0", "--json"])
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["count"]["missed"] == int(misses) == 100
    assert summary["timestamp"]["caught"] == int(catches) == 100
