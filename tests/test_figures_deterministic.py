"""Deterministic figures in every format (issue 20): no creation date, SOURCE_DATE_EPOCH honoured.

matplotlib dates PDF, SVG, PS and EPS files with the clock (and the time zone, for PS)
unless told otherwise. ``sim.runtime.outputs.save_figure`` (every figure the testbed
writes goes through it) removes the date; with ``SOURCE_DATE_EPOCH`` set, that date is used.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from matplotlib.figure import Figure  # no pyplot: no GUI backend is chosen

from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.runtime.outputs import save_figure

FORMATS = ["png", "svg", "pdf", "eps", "ps"]


def _figure() -> Figure:
    figure = Figure(figsize=(3, 2))
    axes = figure.add_subplot()
    axes.plot([0, 1, 2], [2, 0, 1], label="crashes")
    axes.set_title("lanes · ü")
    axes.legend()
    return figure


@pytest.mark.parametrize("kind", FORMATS)
def test_the_same_figure_gives_the_same_bytes_a_second_later_in_another_zone(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saved twice, 1.1 s and a time zone apart (PS writes local time): byte-identical."""
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    first, second = tmp_path / f"a.{kind}", tmp_path / f"b.{kind}"
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    save_figure(_figure(), first)
    time.sleep(1.1)  # ctime has one-second resolution: a date would now differ
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        save_figure(_figure(), second)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert first.read_bytes() == second.read_bytes()
    assert b"CreationDate" not in first.read_bytes() or kind == "png"


@pytest.mark.parametrize(("kind", "stamp"), [
    ("pdf", b"D:19700101"), ("ps", b"%%CreationDate: Thu Jan 01 00:00:00 1970"),
    ("eps", b"%%CreationDate: Thu Jan 01 00:00:00 1970"), ("svg", b"1970-01-01"),
])
def test_source_date_epoch_is_the_date_written(
    kind: str, stamp: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With SOURCE_DATE_EPOCH=0 each dated format carries 1 January 1970, not today."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    out = tmp_path / f"x.{kind}"
    save_figure(_figure(), out)
    assert stamp in out.read_bytes()


@pytest.mark.parametrize("kind", ["eps", "ps", "pdf", "svg"])
def test_timeline_files_are_identical_run_to_run(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compare --timeline x.eps`` (and the other dated formats) twice: the same bytes."""
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    monkeypatch.chdir(tmp_path)
    for name in ("a", "b"):
        assert main(["compare", "sept25-crash-loop", "--check", "count", "--json",
                     "--timeline", f"{name}.{kind}"]) in (0, 1)
        time.sleep(1.1 if name == "a" else 0)
    capsys.readouterr()
    assert Path(f"a.{kind}").read_bytes() == Path(f"b.{kind}").read_bytes()


def test_a_bad_source_date_epoch_is_refused_before_any_work(capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """SOURCE_DATE_EPOCH=soon: exit 2 naming it, not matplotlib's ValueError at the end."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "soon")
    assert main(["compare", "sept25-crash-loop", "--check", "count"]) == 2
    assert "SOURCE_DATE_EPOCH: must be whole seconds" in capsys.readouterr().err
