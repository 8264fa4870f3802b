"""Virtual time (``sim.vtime``): the preload library's clock and waits, on a clock moved by hand.

Each test starts a real program under the library with a ``SharedClock`` the test moves
itself, so what the program reads and how long it waits is decided by the test alone.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from platform_testbed.sim.vtime import PortProbe, SharedClock, Unavailable, library_path
from platform_testbed.sim.vtime import build as vbuild

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="LD_PRELOAD and /proc: Linux"),
    pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler"),
]
REALTIME_NS = 1_700_000_000_000_000_000  # 2023-11-14T22:13:20Z
MONOTONIC_NS = 5_000_000_000_000


@pytest.fixture
def shared() -> SharedClock:
    clock = SharedClock(realtime_base_ns=REALTIME_NS, monotonic_base_ns=MONOTONIC_NS)
    yield clock
    clock.close()


def _env(shared: SharedClock) -> dict[str, str]:
    return {**os.environ, "LD_PRELOAD": str(library_path()), **shared.environment()}


def _run(shared: SharedClock, *argv: str) -> str:
    done = subprocess.run(argv, env=_env(shared), capture_output=True, text=True, timeout=20, check=True)
    return done.stdout.strip()


def _wait_for(shared: SharedClock, count: int = 1, limit_s: float = 10.0) -> list[int]:
    """The deadlines of the registered waits, once ``count`` are registered."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        waits = shared.waits()
        if len(waits) >= count:
            return sorted(w[2] for w in waits)
        time.sleep(0.002)
    raise AssertionError(f"fewer than {count} waits registered in {limit_s} s")


def test_the_wall_clocks_read_the_shared_clock(shared: SharedClock) -> None:
    """`date`, Python's time.time and time.monotonic read the file's clock, not the machine's."""
    shared.move_to(2_500_000_000)
    assert _run(shared, "date", "+%s%3N") == str((REALTIME_NS + 2_500_000_000) // 1_000_000)
    out = _run(shared, sys.executable, "-c", "import time; print(time.time_ns(), time.monotonic_ns())")
    assert out.split() == [str(REALTIME_NS + 2_500_000_000), str(MONOTONIC_NS + 2_500_000_000)]


def test_cpu_clocks_stay_real(shared: SharedClock) -> None:
    """A process's CPU time is its own: it moves while the shared clock stands still."""
    out = _run(shared, sys.executable, "-c",
               "import time; a = time.process_time(); sum(range(3_000_000)); "
               "print(time.process_time() > a, time.time_ns())")
    assert out == f"True {REALTIME_NS}"


@pytest.mark.parametrize("argv", [
    ("sleep", "5"),  # coreutils: nanosleep
    (sys.executable, "-c", "import time; time.sleep(5)"),  # 3.11: clock_nanosleep, TIMER_ABSTIME
    (sys.executable, "-c", "import select; select.select([], [], [], 5)"),
    (sys.executable, "-c", "import select, os; r, w = os.pipe(); p = select.poll(); "
                           "p.register(r); p.poll(5000)"),
    (sys.executable, "-c", "import select, os; r, w = os.pipe(); e = select.epoll(); "
                           "e.register(r); e.poll(5)"),
], ids=["nanosleep", "clock_nanosleep-abstime", "select", "poll", "epoll"])
def test_a_timed_wait_ends_when_the_shared_clock_reaches_its_deadline(
        shared: SharedClock, argv: tuple[str, ...]) -> None:
    """A 5 s wait registers the deadline now + 5 s, and ends only when the clock is moved there."""
    shared.move_to(1_000_000_000)
    proc = subprocess.Popen(argv, env=_env(shared))
    try:
        [deadline] = _wait_for(shared)
        # ppoll/epoll round the timeout to ms; the deadline is 5 s after the clock read.
        assert abs(deadline - 6_000_000_000) < 2_000_000
        time.sleep(0.2)
        assert proc.poll() is None  # 0.2 wall s and the clock not moved: still waiting
        shared.move_to(deadline - 1)
        time.sleep(0.05)
        assert proc.poll() is None
        shared.move_to(deadline)
        assert proc.wait(timeout=5) == 0
    finally:
        proc.kill()
        proc.wait()
    assert shared.waits() == ()  # the slot was given back


def test_a_descriptor_wait_returns_at_once_when_the_descriptor_is_ready(shared: SharedClock) -> None:
    """poll with a 60 s timeout on a pipe returns when the pipe has data, the clock unmoved."""
    code = ("import os, select, sys; r, w = os.pipe(); "
            "pid = os.fork()\nif pid == 0:\n    os.write(w, b'x'); os._exit(0)\n"
            "p = select.poll(); p.register(r, select.POLLIN); print(len(p.poll(60000)))")
    start = time.monotonic()
    assert _run(shared, sys.executable, "-c", code) == "1"
    assert time.monotonic() - start < 10  # not the 60 s of the timeout (on any clock)
    assert shared.now_ns == 0


def test_node_timers_wait_on_the_shared_clock(shared: SharedClock) -> None:
    """Node's setTimeout (libuv's epoll timeout) sees 4000 ms pass on the shared clock."""
    if shutil.which("node") is None:
        pytest.skip("no node")
    proc = subprocess.Popen(["node", "-e", "const t = Date.now(); setTimeout(() => "
                             "console.log(Date.now() - t), 4000)"], env=_env(shared),
                            stdout=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 15
        while proc.poll() is None and time.monotonic() < end:
            waits = shared.waits()
            if waits:
                shared.move_to(max(shared.now_ns, min(w[2] for w in waits)))
            time.sleep(0.005)
        out, _ = proc.communicate(timeout=5)
    finally:
        proc.kill()
    assert out.strip() == "4000"


def test_without_the_file_the_library_is_the_c_librarys_own() -> None:
    """With no shared file named, the library changes nothing: the machine's clock and sleeps."""
    env = {k: v for k, v in os.environ.items() if k != "TESTBED_VTIME_SHM"}
    env["LD_PRELOAD"] = str(library_path())
    out = subprocess.run([sys.executable, "-c", "import time; print(time.time())"], env=env,
                         capture_output=True, text=True, timeout=20, check=True).stdout
    assert abs(float(out) - time.time()) < 30


def test_no_compiler_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed build is ``Unavailable`` with one line naming the compiler and the way out."""
    monkeypatch.setenv(vbuild.CACHE_ENV, str(tmp_path))
    monkeypatch.setenv("CC", "/bin/false")
    with pytest.raises(Unavailable) as caught:
        library_path()
    text = str(caught.value)
    assert "/bin/false" in text
    assert "--time scaled" in text
    assert "\n" not in text
    assert list(tmp_path.iterdir()) == []  # nothing half-built left


def test_the_library_is_built_once_per_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The library is cached under its source's hash: a second call builds nothing."""
    monkeypatch.setenv(vbuild.CACHE_ENV, str(tmp_path))
    first = library_path()
    assert first.parent == tmp_path
    monkeypatch.setenv("CC", "/bin/false")  # a rebuild would fail
    assert library_path() == first


@pytest.mark.parametrize("netlink", [True, False], ids=["sock_diag", "own-descriptors"])
def test_the_port_probe_sees_what_is_in_flight(netlink: bool) -> None:
    """A connection not yet accepted and bytes not yet read (either way) are in flight; else quiet."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(5)
        probe = PortProbe(server.getsockname()[1])
        probe._netlink = netlink
        assert probe.quiet()
        with socket.create_connection(server.getsockname()) as client:
            assert not probe.quiet()  # in the listen queue
            accepted, _ = server.accept()
            with accepted:
                assert probe.quiet()
                client.sendall(b"GET")
                assert not probe.quiet()  # the request unread by the server
                accepted.recv(3)
                assert probe.quiet()
                accepted.sendall(b"200")
                if netlink:  # the answer unread by the client: only the kernel's table shows it
                    assert not probe.quiet()
                client.recv(3)
                assert probe.quiet()


def test_a_dead_sessions_file_is_swept_by_the_next(tmp_path: Path) -> None:
    """A file left by a session whose process died (SIGKILL) goes when the next one opens."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    probe = SharedClock(realtime_base_ns=0, monotonic_base_ns=0)
    folder = probe.path.parent
    probe.close()
    left = folder / f"testbed-vtime-{dead}-leftover"
    left.write_bytes(b"")
    alive = folder / f"testbed-vtime-{os.getpid()}-mine"
    alive.write_bytes(b"")
    clock = SharedClock(realtime_base_ns=0, monotonic_base_ns=0)
    try:
        assert not left.exists()
        assert alive.exists()  # this process lives: its files stay
        assert clock.path.name.startswith(f"testbed-vtime-{os.getpid()}-")
    finally:
        clock.close()
        alive.unlink()
