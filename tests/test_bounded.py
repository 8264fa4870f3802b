"""Bounded by construction: loops have floors, rollouts estimate their work before they start."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import platform_testbed.sim.sweep.run as sweep_run
from platform_testbed.sim.cli.parser import main as run_cli
from platform_testbed.sim.config.settings import BadInput
from platform_testbed.sim.rollout.config import load, shipped
from platform_testbed.sim.rollout.world import (
    MAX_ROLLOUT_EVENTS,
    ROLLOUT_EVENTS_ENV,
    check_work,
    estimate_work,
    run,
)
from platform_testbed.sim.runtime import scheduler
from platform_testbed.sim.runtime.scheduler import check_scheduler, scheduler_address

SMALL = Path(__file__).parent / "data" / "sweeps" / "small.toml"

#: The issue's world: every value inside its documented limit, a billion watchdog looks.
HUGE = ["fleet.servers=100", "watchdog.interval_s=0.01", "settle_s=86400"]


@pytest.mark.parametrize(
    ("key", "value", "floor"),
    [
        ("balancer.interval_s", "1e-9", r"0\.1 s: each target is probed once per interval"),
        ("balancer.interval_s", "0.001", r"0\.1 s: each target is probed once per interval"),
        ("balancer.interval_s", "-1", r"0\.1 s"),
        ("watchdog.interval_s", "0.001", r"0\.01 s: each server's watchdog looks once"),
    ],
)
def test_every_loop_interval_has_a_floor_with_its_reason(key: str, value: str, floor: str) -> None:
    """An interval below its floor is refused at load, naming the field, the floor and why."""
    with pytest.raises(BadInput, match=rf"{key}: must be at least {floor}"):
        load("fixed", [f"{key}={value}"])


def test_the_floors_themselves_are_accepted() -> None:
    """The floor is a floor, not a bound just above it."""
    scenario = load("fixed", ["balancer.interval_s=0.1", "watchdog.interval_s=0.01"])
    assert scenario.balancer.interval_s == 0.1
    assert scenario.watchdog.interval_s == 0.01


def test_a_rollout_past_the_event_limit_is_refused_before_it_starts() -> None:
    """The issue's 25 s world is refused at once, naming the estimate, the limit and its variable."""
    scenario = load("original", HUGE)
    started = time.perf_counter()
    with pytest.raises(BadInput, match=rf"past the limit of {MAX_ROLLOUT_EVENTS:,} .*"
                                       rf"set {ROLLOUT_EVENTS_ENV}\)$") as refused:
        run(scenario, 0)
    assert time.perf_counter() - started < 1.0
    assert "watchdog looks over" in str(refused.value)


def test_the_estimate_counts_each_loop_per_server_over_the_horizon() -> None:
    """Probes = servers x horizon / interval, watchdog looks likewise, requests = rps x horizon."""
    scenario = load("original", HUGE)
    estimate = estimate_work(scenario)
    assert estimate.horizon_s > 86_400
    assert estimate.watchdog_looks == pytest.approx(100 * estimate.horizon_s / 0.01)
    assert estimate.probes == pytest.approx(100 * estimate.horizon_s / scenario.balancer.interval_s)
    assert estimate.requests == pytest.approx(scenario.traffic.rps * estimate.horizon_s)
    off = load("original", [*HUGE, "watchdog.enabled=false"])
    assert estimate_work(off).watchdog_looks == 0


@pytest.mark.parametrize("name", sorted(shipped()))
def test_the_estimate_is_not_below_what_a_shipped_rollout_does(name: str) -> None:
    """An independent count (the probes the run recorded, its end) stays within the estimate."""
    scenario = load(name)
    estimate = estimate_work(scenario)
    result = run(scenario, 0)
    assert result.end_s <= estimate.horizon_s
    assert len(result.trace.probes) <= estimate.probes
    assert estimate.events < MAX_ROLLOUT_EVENTS / 100  # far inside the limit


def test_the_event_limit_can_be_raised_or_lowered(monkeypatch: pytest.MonkeyPatch) -> None:
    """TESTBED_MAX_ROLLOUT_EVENTS moves the limit; a bad value is refused by the env rule."""
    scenario = load("original")
    monkeypatch.setenv(ROLLOUT_EVENTS_ENV, "10")
    with pytest.raises(BadInput, match=r"past the limit of 10 "):
        check_work(scenario)
    monkeypatch.setenv(ROLLOUT_EVENTS_ENV, "nan")
    with pytest.raises(BadInput, match=rf"^{ROLLOUT_EVENTS_ENV}: must be a whole number from 1"):
        check_work(scenario)


# --- Dask: the address judged, the scheduler reached, before any world runs ------------------


@pytest.fixture
def silent_listener() -> Iterator[str]:
    """A TCP listener on 127.0.0.1 that accepts connections and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError, OSError):
                accepted.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    "address",
    ["inproc://", "inproc://127.0.0.1/1/1", "tcp://", "tcp://127.0.0.1", "127.0.0.1:0",
     "localhost:99999", "udp://127.0.0.1:8786", "tcp://:8786", "tcp://a b:8786",
     "tcp://127.0.0.1:86x", "tcp://[::zz]:8786", ""],
)
def test_a_malformed_dask_address_is_refused_by_its_rule(address: str) -> None:
    """One line naming --dask and the rule; inproc:// says why it cannot be reached."""
    with pytest.raises(BadInput, match=r"^--dask: must be tcp://HOST:PORT") as refused:
        scheduler_address(address)
    if address.startswith("inproc"):
        assert "no other can reach it" in str(refused.value)


def test_a_malformed_dask_address_is_refused_before_any_world(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``testbed sweep --dask inproc://`` exits 2 and no calibration (no world) ran."""
    def no_world(*args: object, **kwargs: object) -> None:
        raise AssertionError("a world ran before the address was judged")

    monkeypatch.setattr(sweep_run, "_calibrate", no_world)
    monkeypatch.setattr(sweep_run, "run_units", no_world)
    assert run_cli(["sweep", str(SMALL), "--dask", "inproc://", "--out", "/dev/null"]) == 2
    assert "--dask: must be tcp://HOST:PORT" in capsys.readouterr().err


def test_a_closed_port_is_reported_at_once() -> None:
    """Nobody listening: refused within a second (the Client took 11.5 s to say so)."""
    started = time.monotonic()
    with pytest.raises(BadInput, match=r"cannot reach the scheduler \(Connection refused\)"):
        check_scheduler(f"tcp://127.0.0.1:{_closed_port()}")
    assert time.monotonic() - started < 1.0


def test_a_listener_that_never_speaks_fails_within_the_timeout(silent_listener: str) -> None:
    """The handshake is bounded: 1 s asked, about 1 s taken (the Client hung past 60 s)."""
    started = time.monotonic()
    with pytest.raises(BadInput, match=r"did not answer within 1 s \(is it a Dask scheduler\?\)"):
        check_scheduler(silent_listener, timeout_s=1.0)
    assert 0.9 < time.monotonic() - started < 3.0


def test_the_command_line_honours_the_timeout_against_a_silent_listener(
    silent_listener: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``testbed sweep --dask`` at a silent listener: exit 2 within the stated timeout."""
    monkeypatch.setattr(scheduler, "DASK_TIMEOUT_S", 1.0)
    started = time.monotonic()
    assert run_cli(["sweep", str(SMALL), "--dask", silent_listener, "--out", "/dev/null"]) == 2
    assert time.monotonic() - started < 3.0
    assert "did not answer within 1 s" in capsys.readouterr().err


def test_a_real_scheduler_is_reached() -> None:
    """A Dask scheduler on 127.0.0.1 answers the handshake: its address comes back."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp://",
                                  host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                  worker_dashboard_address="127.0.0.1:0") as cluster:
        address = cluster.scheduler_address
        assert check_scheduler(address) == address
        assert check_scheduler(address.removeprefix("tcp://")) == address
