"""`testbed hunt` ends on Ctrl-C or SIGTERM even where hypothesis loses the signal's exception.

Python ignores an exception raised inside a gc callback (hypothesis installs one), and
hypothesis reports one raised while it draws a world as its own FlakyStrategyDefinition.
Each test sends this process a real signal at a chosen moment, in-process, so the moment
is exact rather than a guessed delay: the handlers ``testbed`` installs take it from there.
"""

from __future__ import annotations

import gc
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from platform_testbed.sim.cli.parser import main

KINDS = [(signal.SIGINT, 130, "testbed: interrupted"), (signal.SIGTERM, 143, "testbed: terminated")]

#: A check that sends the signal inside a gc callback at its third look, then passes.
GC_CHECK = """
import gc, signal
from platform_testbed.checks import Verdict, Wait

LOOKS = [0]

def _in_gc(phase, info):
    gc.callbacks.remove(_in_gc)
    signal.raise_signal(signal.{name})  # its handler raises here, inside the gc callback

class LostInGc:
    name = 'lost-in-gc'
    def next(self, publish_started_ms, looks):
        LOOKS[0] += 1
        if LOOKS[0] == 3:
            gc.callbacks.append(_in_gc)
            gc.collect()
        if len(looks) < 2:
            return Wait(1.0)
        return Verdict(True, 'fine')
"""


def _hunt(tmp_path: Path, check: str) -> tuple[int, Path]:
    out = tmp_path / "out"
    code = main(["hunt", "--check", check, "--budget", "20", "--out", str(out), "--no-progress"])
    return code, out


@pytest.mark.parametrize(("signum", "status", "line"), KINDS)
def test_a_signal_lost_in_a_gc_callback_still_ends_the_hunt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], signum: int, status: int, line: str
) -> None:
    """A signal whose exception gc swallows ends the hunt: its status, one line, no file."""
    name = signal.Signals(signum).name
    check = tmp_path / "lost.py"
    check.write_text(GC_CHECK.replace("{name}", name))
    callbacks = list(gc.callbacks)
    try:
        code, out = _hunt(tmp_path, f"{check}:LostInGc")
    finally:
        gc.callbacks[:] = callbacks  # the check removes its callback; never leave one behind
    assert code == status
    assert capsys.readouterr().err == line + "\n"
    assert not any(out.iterdir())


def _raising_on(draw: int, signum: int) -> Callable[..., Any]:
    """A ``worlds`` stand-in whose strategy sends the signal midway through its ``draw``-th world.

    Midway: after the world's first choice, whose every value earlier worlds have already
    continued past, so hypothesis finds this world "stopped drawing earlier" than before.
    """
    drawn = [0]

    @st.composite
    def world(draw_from: st.DrawFn) -> tuple[()]:
        draw_from(st.integers(0, 1))
        drawn[0] += 1
        if drawn[0] == draw:
            signal.raise_signal(signum)
        draw_from(st.integers(0, 9))
        return ()

    return lambda base, any_behavior=True: world()


@pytest.mark.parametrize("kind", KINDS)
def test_a_signal_while_hypothesis_draws_ends_the_hunt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    kind: tuple[int, int, str],
) -> None:
    """A signal while hypothesis draws a world ends the hunt as the signal, not as its error."""
    signum, status, line = kind
    monkeypatch.setattr("platform_testbed.sim.hunt.search.worlds", _raising_on(10, signum))
    code, out = _hunt(tmp_path, "timestamp")
    assert code == status
    assert capsys.readouterr().err == line + "\n"
    assert not any(out.iterdir())
