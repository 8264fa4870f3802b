"""Run a rollout file's deploy on real parts (HAProxy, server processes, load) and in the model.

Timings are scaled by one factor for both sides (``variants.scaled``).

The deploy follows ``sim.rollout.deploy.RollingDeploy._update``, one server at a time:
SIGTERM (the drain: health 503, requests served), the process closes its listener after
``serve_after_drain_s`` and exits ``shutdown_s`` later, or is SIGKILLed at
``stop_grace_period_s``; at its exit the new one is started with a start time drawn from
``uniform(start_min_s, start_max_s)``; the deploy moves on when HAProxy has the new server
UP after a check it answered (the model's ``wait_healthy``), or fails after
``healthy_timeout_s``. The fleet is up and checked healthy before traffic begins, and
traffic runs from ``0`` to ``settle_s`` after the last server, as in ``sim.rollout.world``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from platform_testbed.sim.rollout.real.figures import Comparison
from platform_testbed.sim.rollout.real.haproxy import (
    Balancer,
    dropped_logs,
    ensure_haproxy,
    parse_log,
    render_config,
    server_states,
)
from platform_testbed.sim.rollout.real.loadgen import LoadGenerator
from platform_testbed.sim.rollout.real.server import free_port
from platform_testbed.sim.rollout.real.variants import (
    DeployFigures,
    Variant,
    model_deploys,
    model_unscaled,
    scaled,
    start_delays,
)

SERVER_SCRIPT = Path(__file__).with_name("server.py")

class DeployFailed(Exception):
    """The real deploy could not run (a server not up, HAProxy not ready)."""


def _read(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except FileNotFoundError:
        return []


#: Every child process running now, so ``kill_all`` can end them if the harness is stopped.
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()
#: The deploys' working folders now in use, removed by ``kill_all`` too.
_DIRS: set[Path] = set()


def kill_all() -> None:
    """SIGKILL every process group this harness started that still runs (on SIGTERM/SIGINT)."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        _kill_group(proc)
    for folder in list(_DIRS):
        shutil.rmtree(folder, ignore_errors=True)


def _kill_group(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None:
        return
    with _LIVE_LOCK:
        _LIVE.discard(proc)
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _popen(cmd: list[str], stdout: Path | None, stderr: Path) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in its own session (so its group can be killed), output to files."""
    with open(stderr, "ab") as err, open(stdout or os.devnull, "ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True)
    with _LIVE_LOCK:
        _LIVE.add(proc)
    return proc


def _wait_for(predicate: Callable[[], bool], timeout_s: float, poll_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)


def real_deploy(  # noqa: PLR0915 -- one deploy's steps, read top to bottom
    variant: Variant, factor: float, seed: int, haproxy: str
) -> DeployFigures:
    """Run one deploy on real parts and tally it; every process started here is ended."""
    scn = scaled(variant, factor)
    d = scn.deploy
    count = scn.fleet.servers
    delays = start_delays(scn, seed)
    with tempfile.TemporaryDirectory(prefix="testbed-lb-") as tmp:
        work = Path(tmp)
        _DIRS.add(work)
        ports: list[int] = []
        while len(ports) < count + 1:
            port = free_port()
            if port not in ports:
                ports.append(port)
        fe_port, server_ports = ports[0], ports[1:]
        procs: list[subprocess.Popen[bytes] | None] = [None] * count
        logs: list[list[Path]] = [[] for _ in range(count)]
        hap: subprocess.Popen[bytes] | None = None
        load_gen: LoadGenerator | None = None
        idle = None if variant.server_idle_s is None else variant.server_idle_s / factor
        # Bounds: no process outlives the longest a deploy can take.
        longest = d.at_s + count * (d.stop_grace_period_s + d.start_max_s + d.healthy_timeout_s)
        longest += scn.settle_s + 30.0
        late: list[float] = []
        dropped: int | None = None

        def spawn(i: int, listen_at: float) -> None:
            log = work / f"s{i + 1}-{len(logs[i])}.log"
            logs[i].append(log)
            procs[i] = _popen(
                [sys.executable, "-I", str(SERVER_SCRIPT), "--port", str(server_ports[i]),
                 "--listen-at", repr(listen_at), "--serve-after-drain", repr(d.serve_after_drain_s),
                 "--shutdown", repr(d.shutdown_s), "--log", str(log), "--max-life", repr(longest),
                 *(["--idle", repr(idle)] if idle is not None else [])],
                None, work / f"s{i + 1}.err",
            )

        def bound(i: int) -> bool:
            return any(line.split()[1] == "L" for line in _read(logs[i][-1]))

        def checked_ok(i: int) -> bool:
            return any(line.split()[1:] == ["H", "200"] for line in _read(logs[i][-1]))

        sock = str(work / "stats.sock")
        poll_s = min(0.01, scn.balancer.interval_s / 20)

        seen: dict[str, str] = {}
        transitions: list[tuple[float, str, str]] = []
        t0 = time.monotonic()

        def states() -> dict[str, str]:
            try:
                now_states = server_states(sock)
            except OSError:
                return {}
            for name, state in now_states.items():
                if seen.get(name) != state:
                    seen[name] = state
                    transitions.append((round(time.monotonic() - t0, 3), name, state))
            return now_states

        try:
            now = time.time()
            for i in range(count):
                spawn(i, now)
            if not _wait_for(lambda: all(bound(i) for i in range(count)), 15.0, 0.02):
                raise DeployFailed("the first servers did not start listening within 15 s")
            balancer = Balancer(
                scn.balancer.interval_s, scn.balancer.unhealthy_threshold,
                scn.balancer.healthy_threshold, variant.retries, variant.redispatch,
                variant.http_reuse, variant.balancer_idle_s / factor, variant.balance,
            )
            cfg = work / "haproxy.cfg"
            cfg.write_text(render_config(balancer, fe_port, server_ports, sock))
            hap = _popen([haproxy, "-f", str(cfg), "-db"], work / "haproxy.log",
                         work / "haproxy.err")

            def fleet_ready() -> bool:
                st = states()
                return (len(st) == count and all(v == "UP" for v in st.values())
                        and all(checked_ok(i) for i in range(count)))

            ready_s = max(15.0, 3 * scn.balancer.interval_s)
            if not _wait_for(fleet_ready, ready_s, 0.02):
                err = (work / "haproxy.err").read_text().strip().splitlines()[-1:]
                raise DeployFailed(f"haproxy not ready with all servers UP: {states()} {err}")
            rate = scn.traffic.rps
            # Its own stream: not random.Random(seed), whose first words seed the model's streams.
            load_gen = LoadGenerator(fe_port, rate, seed=f"loadgen/{seed}",
                                     max_requests=int(rate * longest * 2) + 100,
                                     max_duration_s=longest)
            t0 = time.monotonic()
            load_gen.start()
            time.sleep(max(0.0, t0 + d.at_s - time.monotonic()))
            forced = 0
            status = "succeeded"
            steps: list[dict[str, Any]] = []
            for i in range(count):
                proc = procs[i]
                assert proc is not None
                drain_at = time.monotonic()
                os.kill(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=max(0.0, drain_at + d.stop_grace_period_s - time.monotonic()))
                except subprocess.TimeoutExpired:
                    _kill_group(proc)
                    forced += 1
                exited_at = time.monotonic()
                listen_at = time.time() + delays[i]
                spawn(i, listen_at)
                name = f"s{i + 1}"

                def healthy(i: int = i, name: str = name) -> bool:
                    # Polled every time (not only once the new server answered a check), so
                    # the transitions record when HAProxy marked the old one DOWN.
                    return states().get(name) == "UP" and checked_ok(i)

                if not _wait_for(healthy, d.healthy_timeout_s, poll_s):
                    status = "failed"
                    break
                bound_at = next((float(x.split()[0]) for x in _read(logs[i][-1])
                                 if x.split()[1] == "L"), listen_at)
                late.append(bound_at - listen_at)
                closed_at = next((float(x.split()[0]) for x in _read(logs[i][-2])
                                  if x.split()[1] == "C"), None)
                steps.append({"server": name, "drain_s": round(drain_at - t0, 3),
                              "closed_s": None if closed_at is None
                              else round(closed_at - time.time() + time.monotonic() - t0, 3),
                              "exited_s": round(exited_at - t0, 3),
                              "listening_s": round(bound_at - time.time() + time.monotonic() - t0, 3),
                              "healthy_s": round(time.monotonic() - t0, 3)})
            deploy_s = time.monotonic() - t0 - d.at_s
            time.sleep(scn.settle_s)
            client = load_gen.stop()
            load_gen = None
            time.sleep(0.05)  # the last log lines
            with contextlib.suppress(OSError):
                dropped = dropped_logs(sock)
        finally:
            if load_gen is not None:
                load_gen.stop(wait_s=2.0)
            if hap is not None and hap.poll() is None:
                hap.send_signal(signal.SIGUSR1)  # soft stop: finish logging
                with contextlib.suppress(subprocess.TimeoutExpired):
                    hap.wait(timeout=2)
            _kill_group(hap)
            for proc in procs:
                _kill_group(proc)
            _DIRS.discard(work)
        tally = parse_log(_read(work / "haproxy.log"))
        server_lines = [line.split() for gen in logs for log in gen for line in _read(log)]
        health_503 = sum(1 for p in server_lines if p[1:] == ["H", "503"])
        served_at_servers = sum(1 for p in server_lines if p[1] == "R")
    return DeployFigures(
        lost=tally.lost,
        health_503=health_503,
        served=tally.served,
        requests=tally.requests,
        detail={
            "deploy": status,
            "lost_by_code": dict(sorted(tally.lost_by_code.items())),
            "lost_by_server": dict(sorted(tally.lost_by_server.items())),
            "retried": tally.retried,
            "other": tally.other,
            "served_at_servers": served_at_servers,
            "client": dict(sorted(client.statuses.items())),
            "client_sent": client.sent,
            # Log lines HAProxy could not write (None: not read): requests the tally misses.
            "dropped_logs": dropped,
            "force_killed": forced,
            "deploy_s": round(deploy_s, 3),
            "bind_late_max_s": round(max(late, default=0.0), 3),
            "steps": steps,
            # The machine's 1-minute load average at the end: the parts share its cores.
            "load_average": round(os.getloadavg()[0], 2),
            "transitions": transitions,
        },
    )


def compare(
    variants: Sequence[Variant],
    *,
    factor: float,
    deploys: int,
    model_seeds: int,
    haproxy: str,
    jobs: int = 1,
    first_seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> list[Comparison]:
    """Per variant, ``deploys`` real deploys (seeds ``first_seed``..) and the model over
    ``model_seeds`` seeds from the same first one (at least ``deploys``); up to ``jobs``
    real deploys at once, each with its own HAProxy, servers and ports."""
    real_seeds = range(first_seed, first_seed + deploys)
    work = [(v, seed) for seed in real_seeds for v in variants]
    done: dict[tuple[int, int], DeployFigures] = {}

    def one(item: tuple[Variant, int]) -> None:
        variant, seed = item
        figures = real_deploy(variant, factor, seed, haproxy)
        done[variants.index(variant), seed] = figures
        if progress:
            progress(f"{variant.name}: seed {seed}: lost {figures.lost} "
                     f"{figures.detail['lost_by_code']}, health 503 {figures.health_503}, "
                     f"served {figures.served}, {figures.detail['deploy_s']:.1f} s")

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for future in [pool.submit(one, item) for item in work]:
            future.result()
    seeds = range(first_seed, first_seed + max(model_seeds, deploys))
    return [
        Comparison(v, factor, [done[k, s] for s in real_seeds],
                   model_deploys(v, factor, seeds), model_unscaled(v, seeds), first_seed)
        for k, v in enumerate(variants)
    ]


def run_all(
    variants: Sequence[Variant],
    *,
    factor: float,
    deploys: int,
    model_seeds: int,
    jobs: int = 1,
    first_seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> list[Comparison]:
    """Every variant (HAProxy installed first if missing)."""
    haproxy = ensure_haproxy()
    return compare(variants, factor=factor, deploys=deploys, model_seeds=model_seeds,
                   haproxy=haproxy, jobs=jobs, first_seed=first_seed, progress=progress)
