"""A Dask scheduler that answers the pre-check and then goes silent ends the sweep in one line.

The fake scheduler is a relay on 127.0.0.1 in front of a real in-process scheduler: it
forwards bytes both ways until it is told to go silent, then accepts connections and
keeps them open without a word, and stops forwarding on the ones it has. Every case is
bounded: the timeouts are set to a second, and ``bounded`` interrupts a case still running
after CASE_LIMIT_S, so a hang fails the test rather than the session.
"""

from __future__ import annotations

import _thread
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config.settings import BadInput
from platform_testbed.sim.runtime import scheduler

distributed = pytest.importorskip("distributed")

SMALL = Path(__file__).parent / "data" / "sweeps" / "small.toml"
#: Seconds any one case may take: the 1 s bounds set below, with room for a loaded machine.
CASE_LIMIT_S = 30.0


@contextlib.contextmanager
def bounded() -> Iterator[None]:
    """Past CASE_LIMIT_S, a Ctrl-C in this (the main) thread: a hang fails the test (the
    command line exits 130, a call raises KeyboardInterrupt) instead of holding the run."""
    timer = threading.Timer(CASE_LIMIT_S, _thread.interrupt_main)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


class Relay:
    """A TCP relay on 127.0.0.1 to ``upstream``; after ``silent.set()`` it says nothing more."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.removeprefix("tcp://").rpartition(":")
        self.upstream = (host, int(port))
        self.silent = threading.Event()
        self._stop = threading.Event()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.05)
        self.address = f"tcp://127.0.0.1:{self._server.getsockname()[1]}"
        self._spawn(self._accept)

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except (TimeoutError, OSError):
                continue
            self._sockets.append(conn)
            if self.silent.is_set():
                continue  # accepted, and never a word
            up = socket.create_connection(self.upstream)
            self._sockets.append(up)
            self._spawn(self._pump, conn, up)
            self._spawn(self._pump, up, conn)

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        src.settimeout(0.05)
        while not self._stop.is_set():
            try:
                data = src.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not data:
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)
                return
            if not self.silent.is_set():  # silent: read and dropped, the peer hears nothing
                with contextlib.suppress(OSError):
                    dst.sendall(data)

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        for sock in [*self._sockets, self._server]:
            sock.close()


@pytest.fixture
def cluster() -> Iterator[Any]:
    """A real scheduler in this process, on 127.0.0.1, with one worker of two threads."""
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  protocol="tcp://", host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0",
                                  worker_dashboard_address="127.0.0.1:0") as local:
        yield local


@pytest.fixture
def relay(cluster: Any) -> Iterator[Relay]:
    fake = Relay(cluster.scheduler_address)
    yield fake
    fake.close()


@pytest.fixture
def short_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """One second for every answer, a heartbeat after 0.2 s of quiet."""
    monkeypatch.setattr(scheduler, "DASK_TIMEOUT_S", 1.0)
    monkeypatch.setattr(scheduler, "HEARTBEAT_S", 0.2)


@pytest.mark.usefixtures("short_bounds")
def test_a_scheduler_silent_after_the_precheck_ends_the_sweep_in_one_line(
    relay: Relay, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """``testbed sweep --dask``: the pre-check is answered, then silence; exit 2, one line,
    no rows written, within the case limit (the Client used to wait for ever)."""
    from platform_testbed.sim.cli import sweep as sweep_cli  # noqa: PLC0415

    real_check = sweep_cli.check_scheduler

    def answered_then_silent(text: str, timeout_s: float | None = None) -> str:
        address = real_check(text, timeout_s)
        relay.silent.set()
        return address

    monkeypatch.setattr(sweep_cli, "check_scheduler", answered_then_silent)
    out = tmp_path / "rows.csv"
    with bounded():
        code = main(["sweep", str(SMALL), "--dask", relay.address, "--out", str(out),
                     "--no-progress"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"testbed: --dask {relay.address}: the scheduler did not answer within 1 s "
                   "(it answered the first check, then went silent)"]
    assert not out.exists()


@pytest.mark.usefixtures("short_bounds")
def test_connect_client_is_bounded_at_a_listener_that_accepts_and_says_nothing(
    relay: Relay,
) -> None:
    """The connection function alone: BadInput after about the 1 s bound, not a hang."""
    relay.silent.set()
    with bounded(), pytest.raises(BadInput, match=r"did not answer within 1 s"):
        scheduler.connect_client(relay.address)


@pytest.mark.usefixtures("short_bounds")
def test_a_scheduler_silent_when_the_work_is_scattered_ends_in_one_line(relay: Relay) -> None:
    """Connected, then silence before the work reaches the workers: the scatter is bounded
    too (it used to wait for ever), BadInput after about the 1 s bound."""
    client = scheduler.connect_client(relay.address)
    try:
        relay.silent.set()
        silent = r"the scheduler stopped answering \(no reply within 1 s while the work went"
        with bounded(), pytest.raises(BadInput, match=silent):
            scheduler.scatter(client, list(range(1000)), relay.address)
    finally:
        relay.silent.clear()  # let the client say goodbye
        client.close(timeout=5)


@pytest.mark.usefixtures("short_bounds")
def test_a_scheduler_silent_mid_sweep_is_noticed_by_the_heartbeat(relay: Relay) -> None:
    """Connected, a task running, then silence: ``completed`` asks after 0.2 s of quiet and
    ends in BadInput when no reply comes within 1 s."""
    client = scheduler.connect_client(relay.address)
    try:
        # 3 s: longer than the detection; a finish while silent is dropped by the relay too,
        # and the worker's thread (not interruptible) ends soon after for the teardown.
        future = client.submit(time.sleep, 3, pure=False)
        time.sleep(0.3)
        relay.silent.set()
        silent = r"the scheduler stopped answering \(no reply within 1 s"
        with bounded(), pytest.raises(BadInput, match=silent):
            list(scheduler.completed(client, [future], relay.address))
    finally:
        relay.silent.clear()  # let the client say goodbye
        client.close(timeout=5)


@pytest.mark.usefixtures("short_bounds")
def test_a_scheduler_that_answers_keeps_a_long_task_waiting(relay: Relay) -> None:
    """The heartbeat does not cut long tasks: a 1.5 s task with a reply every 0.2 s of quiet
    finishes, and its result comes back."""
    client = scheduler.connect_client(relay.address)
    try:
        asked = []
        answer = client.sync

        def counted(*args: Any, **kwargs: Any) -> Any:
            asked.append(kwargs.get("callback_timeout"))
            return answer(*args, **kwargs)

        client.sync = counted  # type: ignore[method-assign]
        slow = client.submit(lambda: (time.sleep(1.5), 7)[1], pure=False)
        quick = client.submit(lambda: 3, pure=False)
        with bounded():
            finished = list(scheduler.completed(client, [slow, quick], relay.address))
        assert [f.result() for f in finished] == [3, 7]
        # The heartbeat's questions (bounded at 1 s) came during the slow task, and were answered.
        assert asked.count(1.0) >= 3
    finally:
        client.close(timeout=5)
