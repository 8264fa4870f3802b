"""Figures and a hunt's found worlds are written whole or not at all, as every output is.

For each writer (``--heatmap``, faceted maps, ``compare --timeline``, hunt's ``.toml``
files, and ``compare --details``, streamed during the run): a failure mid-write keeps the
previous file byte for byte and leaves no temporary file; a real SIGINT sent from inside
the write (as in ``tests/test_signals_pool.py``) is held until the new file is whole; a new
file has the umask's permissions.

The write is interrupted deterministically: the figure's ``savefig`` (or the hunt's text
writer) is replaced by one that writes the first half of the real bytes, then fails or
signals, then writes the rest.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from matplotlib.figure import Figure

import platform_testbed.sim.hunt.output as hunt_output
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config import scenario
from platform_testbed.sim.config.settings import BadInput
from platform_testbed.sim.hunt.search import Found, HuntResult
from platform_testbed.sim.publish.world import RunResult
from platform_testbed.sim.runtime.outputs import OutputFailed, replacing
from platform_testbed.sim.show.explore import traced_runs
from platform_testbed.sim.show.plot import save_timeline
from platform_testbed.sim.sweep import load_sweep, run_sweep
from platform_testbed.sim.sweep.facets import save_facet_maps
from platform_testbed.sim.sweep.heatmap import save_heatmap

SMALL = Path(__file__).parent / "data" / "sweeps" / "small.toml"
PREVIOUS = b"the previous run's file\n"
REAL_SAVEFIG = Figure.savefig

#: Four axes for a faceted map, and rows over them (a miss in one square, a catch in another).
FACET_KEYS = ("release.crash_after_s", "check.look_delay_s", "platform.event_log_cap", "traffic.rps")
FACET_AXES = {"release.crash_after_s": [1, 3], "check.look_delay_s": [3, 10],
              "platform.event_log_cap": [2, 5], "traffic.rps": [2]}
FACET_ROWS = [
    {"check": "count", "outcome": outcome, "release.crash_after_s": x,
     "check.look_delay_s": 3, "platform.event_log_cap": cap, "traffic.rps": 2}
    for x, cap, outcome in ((1, 2, "missed"), (3, 5, "caught"))
]


@pytest.fixture(scope="module")
def sweep_rows() -> list[dict[str, Any]]:
    """The small sweep's rows (the heatmap's input)."""
    result = run_sweep(load_sweep(SMALL), workers=1)
    assert result.complete
    return result.rows


@pytest.fixture(scope="module")
def runs() -> tuple[RunResult, ...]:
    """Traced runs of the crash loop (the timeline's input)."""
    return tuple(traced_runs(scenario.load("sept25-crash-loop")))


Writer = Callable[[Path], Path]


@pytest.fixture(params=["heatmap", "facets", "timeline"])
def figure_writer(
    request: pytest.FixtureRequest, sweep_rows: list[dict[str, Any]], runs: tuple[RunResult, ...]
) -> Writer:
    """A writer of one figure into a folder; it returns the path it writes."""
    def heatmap(folder: Path) -> Path:
        save_heatmap(sweep_rows, load_sweep(SMALL), folder / "map.png")
        return folder / "map.png"

    def facets(folder: Path) -> Path:
        [written] = save_facet_maps(
            FACET_ROWS, ["count"], axes=FACET_AXES, keys=FACET_KEYS,
            mark={"release.crash_after_s": 1}, path=folder / "grid.png", name="four axes")
        assert written == folder / "grid-count.png"
        return written

    def timeline(folder: Path) -> Path:
        return save_timeline(folder / "timeline.png", "sept25-crash-loop", runs)

    writers: dict[str, Writer] = {"heatmap": heatmap, "facets": facets, "timeline": timeline}
    return writers[request.param]


def _target(writer: Writer, folder: Path) -> Path:
    """Where ``writer`` writes in ``folder``, learnt by writing it once elsewhere."""
    scratch = folder.parent / f"{folder.name}-scratch"
    scratch.mkdir()
    return folder / writer(scratch).name


def _whole(writer: Writer, tmp_path: Path) -> bytes:
    """The bytes a write that nothing interrupted gives."""
    folder = tmp_path / "whole"
    folder.mkdir()
    return writer(folder).read_bytes()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The folder the interrupted write goes to."""
    made = tmp_path / "out"
    made.mkdir()
    return made


def _interrupt_savefig(monkeypatch: pytest.MonkeyPatch, then: Callable[[], None],
                       seen: list[str], folder: Path) -> None:
    """Make every figure's savefig write half its real bytes, run ``then``, write the rest."""
    def savefig(self: Figure, fname: Any, **kwargs: Any) -> None:
        if isinstance(fname, str | os.PathLike):  # as savefig does: the file it names
            kwargs.setdefault("format", Path(fname).suffix.lstrip("."))
            with open(fname, "wb") as handle:
                savefig(self, handle, **kwargs)
            return
        rendered = io.BytesIO()
        REAL_SAVEFIG(self, rendered, **kwargs)
        data = rendered.getvalue()
        fname.write(data[: len(data) // 2])
        seen.extend(sorted(p.name for p in folder.iterdir()))
        then()
        fname.write(data[len(data) // 2:])

    monkeypatch.setattr(Figure, "savefig", savefig)


def _disk_full() -> None:
    raise OSError(28, "No space left on device")


def _sigint() -> None:
    os.kill(os.getpid(), signal.SIGINT)


@contextlib.contextmanager
def _umask(mask: int) -> Iterator[None]:
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


# --- figures: --heatmap, faceted maps, --timeline ------------------------------------------


def test_a_failed_figure_write_keeps_the_previous_file(
    figure_writer: Writer, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save that fails half way: the previous file byte for byte, no temporary file."""
    target = _target(figure_writer, folder)
    target.write_bytes(PREVIOUS)
    seen: list[str] = []
    _interrupt_savefig(monkeypatch, _disk_full, seen, folder)
    with pytest.raises((OSError, BadInput)):
        figure_writer(folder)
    assert target.read_bytes() == PREVIOUS
    assert [p.name for p in folder.iterdir()] == [target.name]
    assert any(name.endswith(".tmp") for name in seen)  # it failed mid-write, beside the target


def test_ctrl_c_during_a_figure_write_ends_with_the_whole_new_file(
    figure_writer: Writer, folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real SIGINT mid-write is held: the new figure is written whole, then it interrupts."""
    target = _target(figure_writer, folder)
    target.write_bytes(PREVIOUS)
    seen: list[str] = []
    _interrupt_savefig(monkeypatch, _sigint, seen, folder)
    with pytest.raises(KeyboardInterrupt):
        figure_writer(folder)
    assert [p.name for p in folder.iterdir()] == [target.name]
    monkeypatch.undo()
    assert target.read_bytes() == _whole(figure_writer, tmp_path)
    assert any(name.endswith(".tmp") for name in seen)  # the signal came mid-write


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640)])
def test_a_new_figure_follows_the_umask(
    figure_writer: Writer, folder: Path, umask: int, mode: int
) -> None:
    """A figure is made with the permissions ``open`` would give it (0666 less the umask)."""
    with _umask(umask):
        written = figure_writer(folder)
    assert written.stat().st_mode & 0o777 == mode


def test_ctrl_c_during_compare_timeline_exits_130_with_the_whole_figure(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """compare --timeline, Ctrl-C mid-save: exit 130, the whole new figure, no temporary file."""
    target = folder / "t.png"
    target.write_bytes(PREVIOUS)
    seen: list[str] = []
    _interrupt_savefig(monkeypatch, _sigint, seen, folder)
    command = ["compare", "sept25-crash-loop", "--runs", "1", "--timeline"]
    assert main([*command, str(target)]) == 130
    assert capsys.readouterr().err.strip() == "testbed: interrupted"
    assert [p.name for p in folder.iterdir()] == ["t.png"]
    monkeypatch.undo()
    whole = tmp_path / "whole" / "t.png"
    whole.parent.mkdir()
    assert main([*command, str(whole)]) == 0
    assert target.read_bytes() == whole.read_bytes()
    assert any(name.endswith(".tmp") for name in seen)  # the signal came mid-write


def test_faceted_map_names_are_judged_before_any_is_written(folder: Path) -> None:
    """A directory where the second check's map would go: bad input, and no map written."""
    (folder / "grid-timestamp.png").mkdir()
    with pytest.raises(BadInput, match=r"--heatmap .*grid-timestamp\.png: is a directory"):
        save_facet_maps(FACET_ROWS, ["count", "timestamp"], axes=FACET_AXES, keys=FACET_KEYS,
                        mark={}, path=folder / "grid.png", name="four axes")
    assert [p.name for p in folder.iterdir()] == ["grid-timestamp.png"]


# --- hunt: the found worlds' scenario files -------------------------------------------------


def _hunt_result() -> HuntResult:
    """Two worlds 'found' (the base itself, twice): two files, count-missed-1 and -2."""
    base = scenario.load("sept25-crash-loop")
    found = Found(world=(), scenario=base, outcome="missed", diagnosis="assumed for the test",
                  why="made by hand", reason="", decided_at_s=None)
    return HuntResult(check="count", base=base, seed=0, budget=1, found=(found, found),
                      worlds_tried=1, rounds=1)


NAMES = ["count-missed-1.toml", "count-missed-2.toml"]


def _interrupt_hunt_writer(monkeypatch: pytest.MonkeyPatch, then: Callable[[], None],
                           seen: list[str], folder: Path) -> None:
    """Make the hunt's text writer write half the file, run ``then``, write the rest."""
    def writer(text: str) -> Callable[[IO[str]], None]:
        def write(handle: IO[str]) -> None:
            handle.write(text[: len(text) // 2])
            seen.extend(sorted(p.name for p in folder.iterdir()))
            then()
            handle.write(text[len(text) // 2:])

        return write

    monkeypatch.setattr(hunt_output, "_writer", writer)


def test_a_failed_hunt_write_keeps_the_previous_files(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A found world's file that fails half way: every previous file kept, no temporary file."""
    for name in NAMES:
        (folder / name).write_bytes(PREVIOUS)
    seen: list[str] = []
    _interrupt_hunt_writer(monkeypatch, _disk_full, seen, folder)
    with pytest.raises(OutputFailed, match="No space left"):
        hunt_output.write_found(_hunt_result(), folder, "--check count")
    assert any(name.endswith(".tmp") for name in seen)
    assert [(folder / name).read_bytes() for name in NAMES] == [PREVIOUS, PREVIOUS]
    assert sorted(p.name for p in folder.iterdir()) == NAMES


def test_ctrl_c_during_a_hunt_write_ends_with_that_file_whole(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real SIGINT while the first file is written: it is written whole, then the hunt stops
    (the second file is not started: it keeps its previous content)."""
    for name in NAMES:
        (folder / name).write_bytes(PREVIOUS)
    seen: list[str] = []
    _interrupt_hunt_writer(monkeypatch, _sigint, seen, folder)
    result = _hunt_result()
    with pytest.raises(KeyboardInterrupt):
        hunt_output.write_found(result, folder, "--check count")
    assert any(name.endswith(".tmp") for name in seen)
    whole = hunt_output.scenario_toml(result, result.found[0], "count-missed-1", "--check count")
    assert (folder / NAMES[0]).read_text(encoding="utf-8") == whole
    assert (folder / NAMES[1]).read_bytes() == PREVIOUS
    assert sorted(p.name for p in folder.iterdir()) == NAMES


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640)])
def test_found_worlds_follow_the_umask(folder: Path, umask: int, mode: int) -> None:
    """Found worlds' files get 0666 less the umask, as ``open`` gives (not mkstemp's 0600)."""
    with _umask(umask):
        paths = hunt_output.write_found(_hunt_result(), folder, "--check count")
    assert [p.name for p in paths] == NAMES
    assert [p.stat().st_mode & 0o777 for p in paths] == [mode, mode]


def test_a_link_where_a_found_world_goes_is_refused_before_any_is_written(
    folder: Path, tmp_path: Path
) -> None:
    """A symbolic link named like the second file: bad input; the link and its file untouched,
    the first file not written (the rename would have replaced the link itself)."""
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_bytes(PREVIOUS)
    (folder / NAMES[1]).symlink_to(elsewhere)
    with pytest.raises(BadInput, match="is a symlink"):
        hunt_output.write_found(_hunt_result(), folder, "--check count")
    assert (folder / NAMES[1]).is_symlink()
    assert elsewhere.read_bytes() == PREVIOUS
    assert [p.name for p in folder.iterdir()] == [NAMES[1]]


# --- compare --details: streamed into a temporary file, renamed at the end ----------------


def test_a_failure_while_details_stream_keeps_the_previous_file(tmp_path: Path) -> None:
    """An error in the middle of the stream: the previous file, no temporary file."""
    target = tmp_path / "runs.jsonl"
    target.write_bytes(PREVIOUS)
    def stream() -> None:
        with replacing(target) as handle:
            handle.write("{}\n")
            _disk_full()

    # The block's own error goes on as it is (a write through the handle would be OutputFailed).
    with pytest.raises(OSError, match="No space left"):
        stream()
    assert target.read_bytes() == PREVIOUS
    assert [p.name for p in tmp_path.iterdir()] == ["runs.jsonl"]


def test_ctrl_c_at_the_details_rename_keeps_every_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """compare --details: Ctrl-C once every run is in (at the fsync): the whole file, 130."""
    target = tmp_path / "runs.jsonl"
    target.write_bytes(PREVIOUS)
    fsync = os.fsync

    def fsync_then_sigint(fd: int) -> None:
        fsync(fd)
        _sigint()

    monkeypatch.setattr(os, "fsync", fsync_then_sigint)  # the os module sim.runtime.outputs calls
    command = ["compare", "sept25-crash-loop", "--runs", "2", "--details"]
    assert main([*command, str(target)]) == 130
    assert capsys.readouterr().err.strip() == "testbed: interrupted"
    assert [p.name for p in tmp_path.iterdir()] == ["runs.jsonl"]
    monkeypatch.undo()
    whole = tmp_path / "whole" / "runs.jsonl"
    whole.parent.mkdir()
    assert main([*command, str(whole)]) == 0
    assert target.read_bytes() == whole.read_bytes()
