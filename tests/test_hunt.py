"""`testbed hunt`: it rediscovers the built-in checks' blind spots, and its files reproduce them."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from platform_testbed.sim.cli.hunt import MAX_BUDGET
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.hunt.space import base_first

#: Small enough for `make test` on 2 cores, large enough to reach each blind spot below
#: (each round stops at the first world of a new kind, so most rounds use far less).
BUDGET = "40"


@pytest.fixture(scope="module")
def hunts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, dict[str, Any], Path]]:
    """One hunt per built-in check the issue names, shared by the tests (they are the slow part)."""
    results = {}
    for check in ("count", "timestamp", "flyctl-smoke"):
        out = tmp_path_factory.mktemp(check)
        results[check] = _run(out, check)
    return results


def _run(out: Path, check: str) -> tuple[int, dict[str, Any], Path]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["hunt", "--check", check, "--budget", BUDGET, "--seed", "0", "--out",
                     str(out), "--json", "--no-progress"])
    return code, json.loads(buffer.getvalue()), out


def _worlds(report: dict[str, Any], outcome: str) -> list[dict[str, Any]]:
    return [f for f in report["found"] if f["outcome"] == outcome]


def _scenario(path: str) -> dict[str, Any]:
    with open(path, "rb") as f:
        return tomllib.load(f)


def test_count_misses_a_fast_crash_loop_at_cap_5(hunts: dict[str, Any]) -> None:
    """A world where count is missed shows crashes in view, crash period < look delay, cap 5."""
    code, report, _ = hunts["count"]
    assert code == 1
    fast = []
    for found in _worlds(report, "missed"):
        world = _scenario(found["file"])
        platform, release, check = world["platform"], world["release"], world["check"]
        if (found["kind"] == "in-view" and release["behavior"] == "crash_after"
                and platform["event_log_cap"] == 5
                and release["crash_after_s"] < check["look_delay_s"]):
            fast.append(found)
    assert fast, report["found"]


def test_timestamp_misses_at_cap_1(hunts: dict[str, Any]) -> None:
    """The timestamp check is missed in a world whose event list holds one event."""
    code, report, _ = hunts["timestamp"]
    assert code == 1
    caps = [_scenario(f["file"])["platform"]["event_log_cap"] for f in _worlds(report, "missed")]
    assert 1 in caps, report["found"]


def test_timestamp_misses_a_crash_slower_than_its_looks(hunts: dict[str, Any]) -> None:
    """The timestamp check is missed by an app that crashes later than the check's look delay."""
    _, report, _ = hunts["timestamp"]
    slow = [
        w for w in (_scenario(f["file"]) for f in _worlds(report, "missed"))
        if w["release"]["behavior"] == "crash_after"
        and w["release"]["crash_after_s"] > w["check"]["look_delay_s"]
    ]
    assert slow, report["found"]


@pytest.mark.parametrize("check", ["count", "timestamp", "flyctl-smoke"])
def test_every_file_found_reproduces_with_compare(
    hunts: dict[str, Any], check: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`testbed compare FILE --check NAME` gives the outcome the hunt found (exit 0, [expect] held)."""
    _, report, out = hunts[check]
    files = sorted(out.glob("*.toml"))
    assert len(files) == len(report["found"]) > 0
    for found in report["found"]:
        capsys.readouterr()
        assert main(["compare", found["file"], "--check", check, "--json"]) == 0, found
        run = json.loads(capsys.readouterr().out)["runs"][0]["results"][0]
        assert run["outcome"] == found["outcome"]
        assert _scenario(found["file"])["expect"] == {check: found["outcome"]}


def test_files_are_named_by_check_outcome_and_number(hunts: dict[str, Any]) -> None:
    """Each file is <check>-<outcome>-<n>.toml, n counting from 1 per outcome."""
    _, report, _ = hunts["timestamp"]
    counts: dict[str, int] = {}
    for found in report["found"]:
        counts[found["outcome"]] = counts.get(found["outcome"], 0) + 1
        assert Path(found["file"]).name == f"timestamp-{found['outcome']}-{counts[found['outcome']]}.toml"
    assert sum(report["summary"].values()) == len(report["found"])


def test_shrunk_worlds_change_few_keys_to_listed_values(hunts: dict[str, Any]) -> None:
    """Shrinking leaves the base world (the count check's own incident) or a few round values."""
    _, report, _ = hunts["count"]
    assert report["found"][0]["changes"] == {}  # the base scenario itself fools count
    assert all(len(f["changes"]) <= 3 for f in report["found"]), report["found"]


def test_same_seed_writes_byte_identical_files(tmp_path: Path, hunts: dict[str, Any]) -> None:
    """A second hunt with the same seed writes the same files, byte for byte."""
    _, _, first = hunts["timestamp"]
    _, _, again = _run(tmp_path / "again", "timestamp")
    names = sorted(p.name for p in first.glob("*.toml"))
    assert names == sorted(p.name for p in again.glob("*.toml"))
    for name in names:
        assert (first / name).read_bytes() == (again / name).read_bytes(), name


def test_nothing_found_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """When no world fools the check, the hunt says so, writes no file and exits 0."""
    # A space of one world, the base, which the timestamp check gets right (caught).
    monkeypatch.setattr("platform_testbed.sim.hunt.search.worlds",
                        lambda base, any_behavior=True: st.just(()))
    out = tmp_path / "out"
    code = main(["hunt", "--check", "timestamp", "--budget", "5", "--out", str(out), "--no-progress"])
    assert code == 0
    assert "no world fooled timestamp" in capsys.readouterr().out
    assert not any(out.iterdir())


def test_a_check_that_raises_is_found_as_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A user check that raises in some worlds is reported with the outcome error, and reproduces."""
    check = tmp_path / "fragile.py"
    check.write_text(
        "from platform_testbed.checks import Verdict, Wait\n"
        "class Fragile:\n"
        "    name = 'fragile'\n"
        "    def next(self, publish_started_ms, looks):\n"
        "        if not looks:\n"
        "            return Wait(1.0)\n"
        "        if len(looks[-1].machines) > 1:\n"
        "            raise RuntimeError('expected one machine')\n"
        "        return Verdict(True, 'fine')\n"
    )
    out = tmp_path / "out"
    code = main(["hunt", "--check", f"{check}:Fragile", "--budget", "20", "--out", str(out),
                 "--json", "--no-progress"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    errors = _worlds(report, "error")
    assert errors
    assert _scenario(errors[0]["file"])["release"]["machines"] > 1
    assert main(["compare", errors[0]["file"], "--check", f"{check}:Fragile"]) == 0


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--check", "nope"], "--check 'nope': unknown check"),
        (["--check", "count", "--budget", "0"], "--budget: must be from 1"),
        (["--check", "count", "--budget", str(MAX_BUDGET + 1)], "--budget: must be from 1"),
        (["--check", "count", "--seed", "-1"], "--seed: must be 0 or more"),
        ([], "hunt takes exactly one check"),
        (["--check", "count", "--check", "timestamp"], "hunt takes exactly one check (got 2)"),
        (["--check", "count", "--scenario", "no-such-world"], "no-such-world"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], field: str
) -> None:
    """Bad input exits 2 with one line naming the field and the rule, before any search."""
    out = tmp_path / "out"
    assert main(["hunt", *argv, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert field in err
    assert err.count("\n") == 1
    assert not out.exists() or not any(out.iterdir())


def test_help_says_hunt_takes_one_check_cmd(capsys: pytest.CaptureFixture[str]) -> None:
    """`hunt --help` says --check-cmd is the one check hunted, not one of several beside --check."""
    with pytest.raises(SystemExit):
        main(["hunt", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    options = text[text.index("options:"):]
    cmd = options[options.index("--check-cmd COMMAND"):options.index("--check-cmd-name NAME")]
    assert "the check to hunt" in cmd
    assert "beside" not in cmd
    assert "repeatable" not in cmd


ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("code", [
    "from platform_testbed.sim.cli.parser import main; "
    "raise SystemExit(main(['hunt', '--check', 'count', '--budget', "
    "'5', '--out', 'found', '--no-progress']) != 1)",
    "from platform_testbed.sim import api; api.hunt('count', budget=5)",
])
def test_a_hunt_leaves_no_hypothesis_folder_in_the_current_directory(tmp_path: Path, code: str) -> None:
    """`testbed hunt` and sim.api.hunt write nothing of hypothesis' into the user's folder."""
    # A fresh process: hypothesis writes its cache of source constants once per process.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("HYPOTHESIS_STORAGE_DIRECTORY", None)  # else hypothesis would write there anyway
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / ".hypothesis").exists()


def test_a_hunt_puts_hypothesis_home_folder_back(tmp_path: Path) -> None:
    """After a hunt, hypothesis' home folder (the test suite's database) is where it was."""
    from hypothesis.configuration import storage_directory  # noqa: PLC0415

    before = storage_directory(intent_to_write=False).home_directory
    _run(tmp_path / "out", "timestamp")
    assert storage_directory(intent_to_write=False).home_directory == before


def test_out_that_is_a_file_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--out naming a file (not a folder) exits 2 naming --out."""
    out = tmp_path / "taken"
    out.write_text("")
    assert main(["hunt", "--check", "count", "--out", str(out), "--no-progress"]) == 2
    assert "--out" in capsys.readouterr().err


def test_axes_shrink_towards_the_base_value() -> None:
    """Each axis lists the base's value first, so shrinking moves a world towards the base."""
    assert base_first(5, (1, 2, 5, 10)) == [5, 1, 2, 10]
    assert base_first(3, (1, 2)) == [3, 1, 2]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_check_in_another_language_is_hunted_and_reproduced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--check-cmd: the node port of timestamp is hunted, and each file reproduces through it."""
    command = f"node {Path(__file__).parent.parent / 'examples' / 'checks' / 'timestamp.js'}"
    out = tmp_path / "out"
    code = main(["hunt", "--check-cmd", command, "--budget", "5", "--out", str(out), "--json",
                 "--no-progress"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert report["found"]
    for found in report["found"]:
        assert _scenario(found["file"])["expect"] == {"timestamp.js": found["outcome"]}
        assert main(["compare", found["file"], "--check-cmd", command]) == 0, found


@pytest.mark.parametrize("columns", [60, 40])
def test_a_narrow_progress_bar_drops_fields_whole(columns: int) -> None:
    """Below 80 columns the bar fits, draws its counts whole and drops the round's state
    rather than cutting it to a few letters."""
    import re  # noqa: PLC0415

    from rich.console import Console  # noqa: PLC0415

    from platform_testbed.sim.cli.hunt import hunt_progress  # noqa: PLC0415

    console = Console(width=columns, file=io.StringIO(), record=True, force_terminal=True,
                      color_system=None)
    progress = hunt_progress("crash_period_vs_look_delay_and_then_some", console)
    task = progress.add_task("round 12 · 3 found · searching", total=100_000)
    progress.update(task, completed=54_321)
    console.print(progress.get_renderable())
    drawn = console.export_text()
    lines = drawn.splitlines()
    assert lines
    assert max(len(line) for line in lines) <= columns
    assert "54321/100000" in drawn
    # The state is shown whole or not at all: no "searc…" (an ellipsis only ends the name).
    assert not re.search(r"(round|found|searching)\S*…|…\S*·", drawn), drawn
    assert "searching" not in drawn
    assert "round" not in drawn


@pytest.mark.parametrize("plot", [True, False])
def test_reproduce_one_adds_timeline_only_where_matplotlib_is_installed(
    plot: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without matplotlib --timeline is exit 2, so the suggested command leaves it out."""
    from platform_testbed.sim import api  # noqa: PLC0415
    from platform_testbed.sim.hunt.output import table  # noqa: PLC0415

    pytest.importorskip("matplotlib")
    result = api.hunt("count", budget=2)
    assert result.found
    if not plot:
        monkeypatch.setitem(sys.modules, "matplotlib", None)  # what an install without it does
    paths = [Path(f"out/hunt/count-{i}.toml") for i in range(len(result.found))]
    last = table(result, paths, "--check count", at=200).splitlines()[-1]
    timeline = " --timeline count-0.png" if plot else ""
    assert last == f"reproduce one: testbed compare out/hunt/count-0.toml --check count{timeline}"
