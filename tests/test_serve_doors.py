"""``testbed serve`` at its doors: a port in use and a horizon before the publish are one
line and exit 2; two signals at once (``timeout`` sends its signal to the command and to
its group) still end the serve with its report and recording; the third abandons it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.runtime.signals import ending_on_signals

ROOT = Path(__file__).resolve().parents[1]


def test_a_port_in_use_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "healthy-release", "--port", str(port)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"testbed: --port: cannot listen on 127.0.0.1:{port} "
                            "(Address already in use)\n")


@pytest.mark.parametrize(("argv", "field", "got"), [
    (["--horizon-s", "1"], "--horizon-s", "1"),
    (["--set", "horizon_s=30"], "horizon_s", "30"),
])
def test_a_horizon_before_the_publish_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], field: str, got: str
) -> None:
    """The sept25 publish is at 30 s: a world that ends by then has nothing to serve."""
    assert main(["serve", "sept25-crash-loop", *argv]) == 2
    err = capsys.readouterr().err
    assert err == f"testbed: {field}: must be after the publish at 30 s (got {got})\n"


@pytest.fixture
def handlers() -> Iterator[list[int]]:
    """SIGINT and SIGTERM handlers that record and raise, as the command line's do; put back."""
    seen: list[int] = []

    class Raised(Exception):
        pass

    def raising(signum: int, frame: Any) -> None:
        seen.append(signum)
        raise Raised(signum)

    previous = {kind: signal.signal(kind, raising) for kind in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield seen
    finally:
        for kind, handler in previous.items():
            signal.signal(kind, handler)


def test_the_first_two_signals_ask_the_end_and_the_third_abandons(handlers: list[int]) -> None:
    stop = threading.Event()
    with ending_on_signals(stop):
        signal.raise_signal(signal.SIGTERM)
        assert stop.is_set()
        signal.raise_signal(signal.SIGINT)  # the same request again: no raise
        assert handlers == []
        with pytest.raises(Exception, match=str(int(signal.SIGINT))):
            signal.raise_signal(signal.SIGINT)  # the third: the handler it replaced
    assert handlers == [signal.SIGINT]
    with pytest.raises(Exception, match=str(int(signal.SIGTERM))):
        signal.raise_signal(signal.SIGTERM)  # after the block, the handlers are back
    assert handlers == [signal.SIGINT, signal.SIGTERM]


def test_an_ignored_signal_stays_ignored() -> None:
    """An ``&`` job of a script starts with SIGINT ignored: the serve leaves it so."""
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with ending_on_signals(stop):
            for _ in range(3):
                signal.raise_signal(signal.SIGINT)
        assert not stop.is_set()
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_two_signals_at_once_still_give_the_report_and_the_recording(tmp_path: Path) -> None:
    """SIGTERM then SIGINT, back to back (two kinds, so the kernel cannot merge them):
    exit 0, the JSON report on stdout, the recording written."""
    record = tmp_path / "looks.jsonl"
    serve = subprocess.Popen(
        [sys.executable, "-m", "platform_testbed", "serve", "healthy-release", "--speed", "20",
         "--json", "--record", str(record)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )
    try:
        assert serve.stderr is not None
        deadline = time.monotonic() + 30
        line = ""
        while not line.startswith("serving") and time.monotonic() < deadline:
            line = serve.stderr.readline()
            assert line or serve.poll() is None, "serve ended before it served"
        assert line.startswith("serving"), line
        exported = dict(serve.stderr.readline().removeprefix("export ").strip().split("=", 1)
                        for _ in range(5))
        # One read of the machines, so the recording has a look to hold.
        request = urllib.request.Request(
            f"{exported['FLAPS_BASE_URL']}/v1/apps/{exported['FLY_APP_NAME']}/machines",
            headers={"Authorization": f"Bearer {exported['FLY_API_TOKEN']}"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200
        serve.send_signal(signal.SIGTERM)
        serve.send_signal(signal.SIGINT)
        out, err = serve.communicate(timeout=30)
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
    assert serve.returncode == 0, err
    report = json.loads(out)
    assert report["scenario"] == "healthy-release"
    assert record.read_text().count("\n") == 1  # the one look


def test_a_serve_no_client_read_leaves_the_recording_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No look to record: the file at --record is kept (an empty one fails every replay)."""
    record = tmp_path / "looks.jsonl"
    record.write_text("an earlier recording\n")
    assert main(["serve", "healthy-release", "--speed", "10000", "--horizon-s", "40",
                 "--record", str(record), "--force"]) == 0
    assert record.read_text() == "an earlier recording\n"
    assert capsys.readouterr().err == (
        f"--record: no request read the machines, so nothing was recorded ({record} left as "
        "it was)\n")
