"""A terminal that fits (issue 13): tables at the terminal's width, bars in 80 columns.

Every human table is drawn at COLUMNS (off a terminal; 100 when unset): no line is wider,
and whatever the width, every check name and verdict the run's ``--json`` reports is still
printed whole. The same command prints the same bytes twice.
"""

from __future__ import annotations

import io
import json
from collections import Counter

import pytest
from rich.console import Console

from platform_testbed.sim.cli.hunt import hunt_progress
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.cli.sweep import sweep_progress
from platform_testbed.sim.show import table
from platform_testbed.sim.show.report import LOUD
from platform_testbed.sim.show.table import DEFAULT_WIDTH, MIN_WIDTH, Table, fit, fits, wrap

WIDTHS = (80, 200)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    main(argv)
    return capsys.readouterr().out


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


# --- the width -------------------------------------------------------------------------


def test_off_a_terminal_the_width_is_columns_or_the_default(monkeypatch):
    """COLUMNS sets the width; unset, a pipe gets DEFAULT_WIDTH; junk in COLUMNS is ignored."""
    monkeypatch.setenv("COLUMNS", "123")
    assert table.width() == 123
    monkeypatch.delenv("COLUMNS")
    assert table.width() == DEFAULT_WIDTH
    monkeypatch.setenv("COLUMNS", "wide")
    assert table.width() == DEFAULT_WIDTH
    monkeypatch.setenv("COLUMNS", "10")
    assert table.width() == MIN_WIDTH


# --- fitting one table -----------------------------------------------------------------

NARROW_TALL = Table(["", "a", "b"], [[f"row {i}", f"{i}", f"{i * i}"] for i in range(12)],
                    across="col")


def test_a_table_that_fits_is_drawn_as_it_is():
    """Header first, then one line per row, in the given order."""
    lines = fit(NARROW_TALL, 80).splitlines()
    assert lines[0].split() == ["a", "b"]
    assert [line.split()[:2] for line in lines[2:]] == [["row", str(i)] for i in range(12)]


def test_a_wide_table_is_transposed_when_that_fits():
    """Columns become rows: the row labels head the columns, the corner names the old header."""
    wide = NARROW_TALL.transposed()
    assert wide.header[0] == "col"
    assert not fits(wide, 60)
    lines = fit(wide, 60).splitlines()
    assert lines[0].split() == ["a", "b"]
    assert [line.split()[:2] for line in lines[2:]] == [["row", str(i)] for i in range(12)]
    assert _widest("\n".join(lines)) <= 60


def test_a_table_too_wide_both_ways_folds_into_blocks_with_every_cell_whole():
    """Blocks repeat the row labels; each cell appears whole, on one line; none wider than asked."""
    cells = [[f"check-{i}", *(f"verdict-{i}-{j}" for j in range(9))] for i in range(9)]
    wide = Table(["check", *(f"scenario-{j}" for j in range(9))], cells)
    text = fit(wide, 60)
    assert _widest(text) <= 60
    for row in cells:
        for cell in row:
            assert cell in text
    assert text.count("check-0") >= 2  # the labels are repeated in each block


def test_blocks_are_as_even_as_fit():
    """Six columns that need two blocks are split three and three."""
    wide = Table(["", *(f"c{j}" for j in range(6))], [["x", *("y" * 12 for _ in range(6))]])
    blocks = fit(wide, 60, transpose=False).split("\n\n")
    assert [len(b.splitlines()[0].split()) for b in blocks] == [3, 3]


def test_prose_folds_inside_its_cell_and_a_column_too_wide_alone_still_fits():
    """A prose column wraps within the width; a single over-wide column folds rather than cuts."""
    long = " ".join(["word"] * 60)
    prose = fit(Table(["name", "text"], [["n", long]], prose=frozenset({1})), 50)
    assert _widest(prose) <= 50
    assert prose.count("word") == 60
    huge = fit(Table(["k", "v"], [["k", "x" * 130]]), 50)
    assert _widest(huge) <= 50
    assert huge.count("x") == 130


def test_wrap_keeps_hyphenated_names_whole():
    """Check names such as min-healthy-time are never broken at their hyphens."""
    lines = wrap("the check min-healthy-time " * 10, 40)
    assert all(len(line) <= 40 for line in lines)
    assert sum(line.count("min-healthy-time") for line in lines) == 10


# --- every command ---------------------------------------------------------------------


@pytest.mark.parametrize("columns", WIDTHS)
def test_compare_fits_and_shows_every_check_and_verdict(columns, monkeypatch, capsys):
    """One world side by side: within COLUMNS, with each check, its verdict and its outcome."""
    monkeypatch.setenv("COLUMNS", str(columns))
    text = _run(["compare", "sept25-crash-loop"], capsys)
    doc = json.loads(_run(["compare", "sept25-crash-loop", "--json"], capsys))
    assert _widest(text) <= columns
    for result in doc["runs"][0]["results"]:
        assert result["check"] in text
        assert (result["verdict"] or "none") in text
        assert LOUD.get(result["outcome"], result["outcome"]) in text
    assert text == _run(["compare", "sept25-crash-loop"], capsys)  # the same bytes again


@pytest.mark.parametrize("columns", WIDTHS)
def test_compare_summary_fits_and_shows_every_check_and_count(columns, monkeypatch, capsys):
    """Over seeds: within COLUMNS, every check and every outcome named, each count shown."""
    monkeypatch.setenv("COLUMNS", str(columns))
    argv = ["compare", "sept25-crash-loop", "--runs", "12", "--summary"]
    text = _run(argv, capsys)
    summary = json.loads(_run([*argv, "--json"], capsys))["summary"]
    assert _widest(text) <= columns
    words = text.split()
    for check, counts in summary.items():
        assert check in words
        for outcome, n in counts.items():
            assert outcome in words
            assert str(n) in words


@pytest.mark.parametrize("columns", WIDTHS)
def test_checks_fits_and_shows_every_scenario_check_and_tally(columns, monkeypatch, capsys):
    """The checks x scenarios table: within COLUMNS, every scenario, check and tally whole."""
    monkeypatch.setenv("COLUMNS", str(columns))
    argv = ["checks", "--runs", "1", "--check", "count", "--check", "timestamp",
            "--check", "min-healthy-time"]
    text = _run(argv, capsys)
    doc = json.loads(_run([*argv, "--json"], capsys))
    assert _widest(text) <= columns
    for scenario, by_check in doc["outcomes"].items():
        assert scenario in text
        for check, counts in by_check.items():
            assert check in text
            for outcome, n in counts.items():
                if n:
                    assert f"{outcome.replace('_', ' ')} {n}" in text


def test_checks_markdown_is_the_readme_table(capsys):
    """--markdown prints the Markdown table the README embeds, one row per check."""
    text = _run(["checks", "--runs", "1", "--check", "count", "--markdown"], capsys)
    assert text.startswith("| check | rule it models | ")
    assert "\n| `count` | " in text


@pytest.mark.parametrize("columns", WIDTHS)
def test_replay_fits_and_shows_every_check_and_verdict(columns, monkeypatch, capsys, tmp_path):
    """Replayed looks: within COLUMNS, each run's row gives its own check and verdict."""
    looks = tmp_path / "looks.jsonl"
    main(["compare", "sept25-crash-loop", "--record", str(looks)])
    monkeypatch.setenv("COLUMNS", str(columns))
    text = _run(["replay", str(looks)], capsys)
    doc = json.loads(_run(["replay", str(looks), "--json"], capsys))
    assert _widest(text) <= columns
    # Every name also appears in the options header and the reasons: judge each run's row.
    rows = {line.split()[0]: line.split()[1:3] for line in text.splitlines() if "/seed=" in line}
    assert {row["run"]: [row["check"], row["verdict"] or "none"] for row in doc["results"]} == rows
    assert {"pass", "fail"} <= {row["verdict"] for row in doc["results"]}  # both kinds shown


@pytest.mark.parametrize("columns", WIDTHS)
def test_rollout_fits_and_shows_every_run(columns, monkeypatch, capsys):
    """A rollout's runs: within COLUMNS, each seed's deploy status and 502 count."""
    monkeypatch.setenv("COLUMNS", str(columns))
    argv = ["rollout", "original", "--runs", "3"]
    text = _run(argv, capsys)
    doc = json.loads(_run([*argv, "--json"], capsys))
    assert _widest(text) <= columns
    rows = {tuple(line.split()[:4]) for line in text.splitlines()}
    for run in doc["runs"]:
        assert (str(run["seed"]), run["deploy"]["status"], str(run["requests"]),
                str(run["bad_gateway"])) in rows


@pytest.mark.parametrize("columns", WIDTHS)
def test_series_lint_and_list_fit(columns, monkeypatch, capsys):
    """series, lint-timing and list: within COLUMNS, with every publish outcome and name."""
    monkeypatch.setenv("COLUMNS", str(columns))
    text = _run(["series", "sept25-three-publishes"], capsys)
    doc = json.loads(_run(["series", "sept25-three-publishes", "--json"], capsys))
    assert _widest(text) <= columns
    for publish in doc["publishes"]:
        assert publish["label"] in text
        for check, outcome in publish["outcomes"].items():
            assert check in text
            assert outcome in text
    assert _widest(_run(["lint-timing", "original"], capsys)) <= columns
    listed = _run(["list"], capsys)
    assert _widest(listed) <= columns
    for name in ("sept25-crash-loop", "slow-crash-loop", "fixed", "original"):
        assert f"  {name} " in listed
    assert _widest(_run(["list", "--profiles"], capsys)) <= columns


@pytest.mark.parametrize("columns", WIDTHS)
def test_sweep_and_hunt_fit(columns, monkeypatch, capsys, tmp_path):
    """sweep's summary and hunt's findings: within COLUMNS, every check and file named."""
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.chdir(tmp_path)  # the files found are named as a user sees them: found/...
    sweep = tmp_path / "small.toml"
    sweep.write_text('name = "small"\nscenario = "sept25-crash-loop"\n'
                     'checks = ["count", "timestamp", "min-healthy-time"]\nseeds = 1\n'
                     '[axes]\n"release.crash_after_s" = [2.5, 8.0]\n')
    argv = ["sweep", str(sweep), "--workers", "1", "--no-progress", "--out",
            str(tmp_path / "rows.csv")]
    text = _run(argv, capsys)
    doc = json.loads(_run([*argv, "--json"], capsys))
    assert _widest(text) <= columns
    for check in doc["checks"]:
        assert check in text
    hunt = ["hunt", "--check", "count", "--budget", "20", "--no-progress", "--out", "found"]
    text = _run(hunt, capsys)
    found = json.loads(_run([*hunt, "--json", "--force"], capsys))["found"]  # its own earlier finds
    assert _widest(text) <= columns
    assert found
    for world in found:
        assert world["file"] in text


# --- progress bars ---------------------------------------------------------------------


@pytest.mark.parametrize("bar", [sweep_progress, hunt_progress])
def test_progress_bars_fit_80_columns(bar):
    """A long name, large counts and a long round description still draw within 80 columns."""
    console = Console(width=80, file=io.StringIO(), record=True, force_terminal=True,
                      color_system=None)
    progress = bar("crash_period_vs_look_delay_and_then_some", console)
    task = progress.add_task("round 12 · 3 found · shrinking", total=100_000)
    progress.update(task, completed=54_321)
    console.print(progress.get_renderable())
    drawn = console.export_text()
    assert drawn.strip()
    assert _widest(drawn) <= 80
    assert "54321/100000" in drawn


def test_a_table_with_no_room_loses_nothing():
    """Where rich would cut a cell or drop a column, the cells fold, or each row becomes
    ``header: value`` lines: never wider, every character still printed."""
    few = Table(["name", "text"], [["n" * 30, "some prose words here and there"]],
                prose=frozenset({1}))
    many = Table(["row", *(f"h{j}" for j in range(30))], [["r", *(f"v{j}" for j in range(30))]],
                 prose=frozenset({1}))
    for wide in (few, many):
        text = fit(wide, 25)
        assert _widest(text) <= 25
        printed = Counter("".join(text.split()))
        assert not Counter("".join("".join(wide.rows[0]).split())) - printed


# --- long check names (a user's check may be named anything) ----------------------------

_USER_CHECK = '''
from dataclasses import dataclass
from platform_testbed.checks import Verdict, Wait

@dataclass(frozen=True)
class Long:
    settle_s: float = 10.0
    name = {name!r}

    def next(self, publish_started_ms, looks):
        if not looks:
            return Wait(self.settle_s)
        return Verdict(True, "no machine's newest exit since the publish is a crash, judged once")
'''
#: 52 and 89 characters: one fits an 80-column line but not beside anything, one fits no line.
LONG_NAMES = ("newest-exit-after-the-publish-judged-by-a-user-check",
              "a-very-long-user-check-name-that-goes-on-and-on-past-any-reasonable-length-for-a-check-xy")


def _shown_whole_or_at_hyphens(text: str, name: str) -> bool:
    """The name on one line, or its pieces on consecutive lines, each break after a '-'."""
    if name in text:
        return True
    lines = text.splitlines()
    for i, line in enumerate(lines):
        words = line.split()
        if not words or not name.startswith(words[-1]) or not words[-1].endswith("-"):
            continue
        rest, j = name[len(words[-1]):], i + 1
        while j < len(lines) and lines[j].split():
            piece = lines[j].split()[0].rstrip(":")
            if piece == rest:
                return True
            if not (rest.startswith(piece) and piece.endswith("-")):
                break
            rest, j = rest[len(piece):], j + 1
    return False


def test_long_name_lengths_are_what_the_tests_say():
    assert [len(n) for n in LONG_NAMES] == [52, 89]


@pytest.mark.parametrize("name", LONG_NAMES)
@pytest.mark.parametrize("runs", [[], ["--runs", "2"]])
def test_a_long_check_name_stays_within_80_columns(name, runs, monkeypatch, capsys, tmp_path):
    """Options, table and reason lines within 80 columns, the name whole or split at '-'.

    The options block and the reason lines hang their text beside the name; a name wider
    than half the line puts the text beneath it instead of in a sliver of a column.
    """
    (tmp_path / "long.py").write_text(_USER_CHECK.format(name=name))
    monkeypatch.setenv("COLUMNS", "80")
    text = _run(["compare", "sept25-crash-loop", "--check", "count",
                 "--check", f"{tmp_path / 'long.py'}:Long", *runs], capsys)
    assert _widest(text) <= 80
    assert _shown_whole_or_at_hyphens(text, name)
    # No line holds a single character (the text folded one letter a line).
    assert not [line for line in text.splitlines() if len(line.strip()) == 1]
    if not runs:
        assert "no machine's newest exit since the publish is a crash, judged once" in " ".join(
            text.split())


def test_wrap_puts_text_beneath_a_label_wider_than_half_the_line():
    """A hang over half the width: the label on its own line(s), the text four spaces in."""
    label = "x" * 50 + ": "
    lines = wrap("some words " * 8, 80, label, " " * len(label))
    assert lines[0] == "x" * 50 + ":"
    assert all(line.startswith("    ") and len(line) <= 80 for line in lines[1:])
    assert " ".join(" ".join(lines[1:]).split()) == " ".join(("some words " * 8).split())
    narrow = wrap("v", 80, "  " + "a-b" * 30 + "  ", " " * 96)
    assert all(len(line) <= 80 for line in narrow)
    assert narrow[0].endswith("-")
    assert narrow[-1] == "      v"


# --- one orientation per table kind ----------------------------------------------------


def _header_words(text: str) -> list[list[str]]:
    """The words of each table's header line (the line above each rule)."""
    lines = text.splitlines()
    return [lines[i - 1].split() for i, line in enumerate(lines) if line.startswith("──")]


@pytest.mark.parametrize("argv", [["compare", "sept25-crash-loop", "--runs", "3"],
                                  ["compare", "sept25-crash-loop"]])
def test_compare_keeps_checks_as_columns_at_every_width(argv, monkeypatch, capsys):
    """One run or many: the checks head the columns at 60 to 200 columns; a narrow
    terminal folds them into blocks of checks instead of turning the table on its side."""
    checks = json.loads(_run([*argv, "--json"], capsys))
    names = list(checks["summary"]) if "summary" in checks else [
        r["check"] for r in checks["runs"][0]["results"]]
    for columns in (60, 80, 100, 101, 110, 200):
        monkeypatch.setenv("COLUMNS", str(columns))
        text = _run(argv, capsys)
        headers = _header_words(text)
        assert [w for h in headers for w in h] == names, columns


# --- help text -------------------------------------------------------------------------


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as ended:
        main([*argv, "--help"])
    assert ended.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_every_subcommand_has_a_description():
    """`testbed X --help` says what X does, above its options, for every subcommand."""
    from platform_testbed.sim.cli.completion import _subcommands  # noqa: PLC0415
    from platform_testbed.sim.cli.parser import build_parser  # noqa: PLC0415

    for name, parser in _subcommands(build_parser()).items():
        assert parser.description, name


def test_help_names_each_check_form_the_loader_accepts(capsys):
    """--check takes a built-in name, package.module:name or path/to/file.py:name (the
    loader's own error message lists the same three), in every command that takes it."""
    for command in ("compare", "replay", "checks"):
        text = _help([command], capsys)
        assert "package.module:name" in text, command
        assert "path/to/file.py:name" in text, command


def test_runs_help_names_its_metavar(capsys):
    """--runs N and a text that speaks of N; the timeline is lanes, not panels; list is not
    'one line each' (a description folds onto several)."""
    for command in ("compare", "checks"):
        text = _help([command], capsys)
        assert "--runs N " in text, command
        assert " N seeds" in text, command
    assert "panel" not in _help(["compare"], capsys)
    assert "one line each" not in _help([], capsys)


@pytest.mark.parametrize("columns", [40, 60, 79])
def test_a_narrow_sweep_bar_drops_columns_and_keeps_counts_and_bar_whole(columns):
    """Below 80 columns the ETA, then the rate, then the elapsed time go, so the counts
    are printed whole and a bar is still drawn (rich would cut every field instead)."""
    console = Console(width=columns, file=io.StringIO(), record=True, force_terminal=True,
                      color_system=None)
    progress = sweep_progress("crash_period_vs_look_delay_and_then_some", console)
    task = progress.add_task("", total=100_000)
    progress.update(task, completed=54_321)
    console.print(progress.get_renderable())
    drawn = console.export_text()
    assert _widest(drawn) <= columns
    assert "54321/100000" in drawn
    assert "━━━" in drawn
    assert "…" not in drawn.split("54321/100000")[1]  # what follows the counts is whole too


# --- numbers and nouns -----------------------------------------------------------------


def test_counted_agrees_noun_with_number():
    """One of a thing is singular, any other count plural; never ``(s)``."""
    assert table.counted(1, "run") == "1 run"
    assert table.counted(0, "run") == "0 runs"
    assert table.counted(2, "health-check 503") == "2 health-check 503s"
    assert table.counted(1, "publish", "publishes") == "1 publish"
    assert table.counted(3, "publish", "publishes") == "3 publishes"


def test_series_prints_times_as_everything_else_does(capsys):
    """A late failure reads ``+150.0 s``, the form compare prints, not ``+150s``."""
    text = _run(["series", "sept25-three-publishes"], capsys)
    doc = json.loads(_run(["series", "sept25-three-publishes", "--json"], capsys))
    lates = [s for p in doc["publishes"] for s in p["late_failure_at_s"].values() if s is not None]
    assert lates
    for late in lates:
        assert f"late +{late:.1f} s" in text
    assert not [w for w in text.split() if w.startswith("+") and w.endswith("s")]


def test_rollout_and_replay_texts_have_no_plural_placeholders(capsys, tmp_path):
    """rollout's totals and replay's title say ``1 run``/``5 runs``, never ``run(s)``."""
    text = _run(["rollout", "original", "--runs", "1"], capsys)
    assert "(s)" not in text
    assert "over 1 run:" in text
    looks = tmp_path / "looks.jsonl"
    main(["compare", "sept25-crash-loop", "--check", "count", "--record", str(looks)])
    assert "(s)" not in _run(["replay", str(looks)], capsys).splitlines()[0]
