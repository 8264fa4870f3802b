"""Run a rollout file's deploy on real parts (HAProxy, server processes, load) and in the model.

All of a rollout file's times are divided by one factor (``--factor``, 20 by default) and
its request rate multiplied by it, so a deploy takes seconds and the counts stay the same;
the model is run with exactly those scaled values (``scaled_sets``), so what is compared is
the model's prediction at the timings the real parts ran with.

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

import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.rollout.config import RolloutScenario, load
from sim.rollout.real.haproxy import Balancer, ensure_haproxy, parse_log, render_config, server_states
from sim.rollout.real.loadgen import LoadGenerator
from sim.rollout.real.server import free_port
from sim.rollout.world import run as model_run

SERVER_SCRIPT = Path(__file__).with_name("server.py")
DEFAULT_FACTOR = 20.0

#: Fields holding seconds, divided by the factor; ``traffic.rps`` is multiplied by it.
TIME_FIELDS = (
    "settle_s",
    "balancer.interval_s",
    "deploy.at_s",
    "deploy.serve_after_drain_s",
    "deploy.shutdown_s",
    "deploy.stop_grace_period_s",
    "deploy.start_min_s",
    "deploy.start_max_s",
    "deploy.healthy_timeout_s",
    "watchdog.interval_s",
    "watchdog.repair_s",
    "timing.max_reheal_s",
)


@dataclass(frozen=True, slots=True)
class Variant:
    """One row of the comparison: a rollout file, overrides, and real-only settings.

    ``server_idle_s`` (the server's keep-alive idle timeout) and ``balancer_idle_s`` (how
    long HAProxy keeps an idle server connection) are in the rollout file's (unscaled)
    seconds; the model has no keep-alive, so they change only the real side.
    """

    name: str
    scenario: str
    sets: tuple[str, ...] = ()
    server_idle_s: float | None = None
    balancer_idle_s: float = 200.0
    http_reuse: str | None = None
    retries: int = 0
    redispatch: bool = False
    #: Rate multiplier over the file's rps (both sides), for variants that need traffic.
    note: str = ""


#: The three configurations of the write-up.
STANDARD = (
    Variant("original", "original"),
    Variant("intermediate", "intermediate"),
    Variant("fixed", "fixed"),
)
#: Configurations the write-up does not give.
EXTRAS = (
    Variant(
        "fixed, server keep-alive 2 s < balancer's 200 s, http-reuse always",
        "fixed",
        server_idle_s=2.0,
        http_reuse="always",
        note="the server closes idle keep-alive connections HAProxy still holds in its pool",
    ),
    Variant(
        "original, HAProxy retries 3 + redispatch",
        "original",
        retries=3,
        redispatch=True,
        note="a refused connection is retried, the last time on another server",
    ),
)


def _get(scenario: RolloutScenario, dotted: str) -> Any:
    obj: Any = scenario
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def scaled_sets(name: str, sets: Sequence[str], factor: float) -> list[str]:
    """``--set`` overrides that divide every time of the file by ``factor`` (rps times it)."""
    base = load(name, list(sets))
    out = list(sets)
    out += [f"{key}={float(_get(base, key)) / factor!r}" for key in TIME_FIELDS]
    out.append(f"traffic.rps={base.traffic.rps * factor!r}")
    return out


def scaled(variant: Variant, factor: float) -> RolloutScenario:
    """The variant's scenario with its times divided by ``factor``."""
    return load(variant.scenario, scaled_sets(variant.scenario, variant.sets, factor))


# ---------------------------------------------------------------------------- model side


@dataclass(frozen=True, slots=True)
class DeployFigures:
    """One deploy's figures, real or modelled."""

    lost: int
    health_503: int
    served: int
    requests: int
    detail: dict[str, Any] = field(default_factory=dict)


def model_deploys(variant: Variant, factor: float, seeds: Sequence[int]) -> list[DeployFigures]:
    """The model's figures at the scaled timings, one per seed."""
    scenario = scaled(variant, factor)
    out = []
    for seed in seeds:
        r = model_run(scenario, seed)
        out.append(DeployFigures(r.bad_gateway, r.draining_503, r.served, r.requests,
                                 {"deploy": r.deploy_status}))
    return out


def model_unscaled(variant: Variant, seeds: Sequence[int]) -> list[int]:
    """The model's 502s at the file's own timings, for the check that scaling changes nothing."""
    scenario = load(variant.scenario, list(variant.sets))
    return [model_run(scenario, seed).bad_gateway for seed in seeds]


# ----------------------------------------------------------------------------- real side


class DeployFailed(Exception):
    """The real deploy could not run (a server not up, HAProxy not ready)."""


def _read(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except FileNotFoundError:
        return []


def _kill_group(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _popen(cmd: list[str], stdout: Path | None, stderr: Path) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in its own session (so its group can be killed), output to files."""
    with open(stderr, "ab") as err:
        if stdout is None:
            return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=err, start_new_session=True)
        with open(stdout, "ab") as out:
            return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True)


def _wait_for(predicate: Callable[[], bool], timeout_s: float, poll_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)


def real_deploy(variant: Variant, factor: float, seed: int, haproxy: str) -> DeployFigures:
    """Run one deploy on real parts and tally it; every process started here is ended."""
    scn = scaled(variant, factor)
    d = scn.deploy
    count = scn.fleet.servers
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="testbed-lb-") as tmp:
        work = Path(tmp)
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

        def states() -> dict[str, str]:
            try:
                return server_states(sock)
            except OSError:
                return {}

        try:
            now = time.time()
            for i in range(count):
                spawn(i, now)
            if not _wait_for(lambda: all(bound(i) for i in range(count)), 15.0, 0.02):
                raise DeployFailed("the first servers did not start listening within 15 s")
            balancer = Balancer(
                scn.balancer.interval_s, scn.balancer.unhealthy_threshold,
                scn.balancer.healthy_threshold, variant.retries, variant.redispatch,
                variant.http_reuse, variant.balancer_idle_s / factor,
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
            load_gen = LoadGenerator(fe_port, rate, seed, int(rate * longest * 2) + 100, longest)
            t0 = time.monotonic()
            load_gen.start()
            time.sleep(max(0.0, t0 + d.at_s - time.monotonic()))
            forced = 0
            status = "succeeded"
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
                listen_at = time.time() + rng.uniform(d.start_min_s, d.start_max_s)
                spawn(i, listen_at)
                name = f"s{i + 1}"
                if not _wait_for(lambda i=i, name=name: checked_ok(i) and states().get(name) == "UP",
                                 d.healthy_timeout_s, poll_s):
                    status = "failed"
                    break
                bound_at = next((float(x.split()[0]) for x in _read(logs[i][-1])
                                 if x.split()[1] == "L"), listen_at)
                late.append(bound_at - listen_at)
            deploy_s = time.monotonic() - t0 - d.at_s
            time.sleep(scn.settle_s)
            client = load_gen.stop()
            load_gen = None
            time.sleep(0.05)  # the last log lines
        finally:
            if load_gen is not None:
                load_gen.stop(wait_s=2.0)
            if hap is not None and hap.poll() is None:
                hap.send_signal(signal.SIGUSR1)  # soft stop: finish logging
                try:
                    hap.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    pass
            _kill_group(hap)
            for proc in procs:
                _kill_group(proc)
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
            "force_killed": forced,
            "deploy_s": round(deploy_s, 3),
            "bind_late_max_s": round(max(late, default=0.0), 3),
        },
    )


# ---------------------------------------------------------------------------- comparison


@dataclass(frozen=True, slots=True)
class Spread:
    """Mean, standard deviation, min, max and count of one figure."""

    mean: float
    sd: float
    lo: int
    hi: int
    n: int

    @classmethod
    def of(cls, values: Sequence[int]) -> Spread:
        """The spread of a list of counts (sd 0 for fewer than two)."""
        if not values:
            return cls(0.0, 0.0, 0, 0, 0)
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        return cls(statistics.fmean(values), sd, min(values), max(values), len(values))

    def text(self) -> str:
        """``mean ± sd (min–max, n)``."""
        return f"{self.mean:.2f} ± {self.sd:.2f} ({self.lo}–{self.hi}, n={self.n})"

    def json(self) -> dict[str, float | int]:
        """JSON-ready."""
        return {"mean": round(self.mean, 3), "sd": round(self.sd, 3), "min": self.lo,
                "max": self.hi, "n": self.n}


@dataclass
class Comparison:
    """One variant: the real deploys and the model's, side by side."""

    variant: Variant
    factor: float
    real: list[DeployFigures]
    model: list[DeployFigures]
    model_unscaled_lost: list[int]

    def spread(self, side: str, figure: str) -> Spread:
        """The spread of ``figure`` over the ``real`` or ``model`` deploys."""
        runs = self.real if side == "real" else self.model
        return Spread.of([getattr(r, figure) for r in runs])

    def gap(self) -> tuple[float, float]:
        """Real mean minus model mean of the losses, and the standard error of that difference."""
        r, m = self.spread("real", "lost"), self.spread("model", "lost")
        se = ((r.sd**2 / r.n if r.n else 0.0) + (m.sd**2 / m.n if m.n else 0.0)) ** 0.5
        return r.mean - m.mean, se

    def codes(self) -> dict[str, int]:
        """HAProxy's loss codes summed over the real deploys."""
        total: Counter[str] = Counter()
        for r in self.real:
            total.update(r.detail.get("lost_by_code", {}))
        return dict(sorted(total.items()))

    def json(self) -> dict[str, Any]:
        """JSON-ready, with every deploy's figures."""
        diff, se = self.gap()
        return {
            "name": self.variant.name,
            "scenario": self.variant.scenario,
            "sets": list(self.variant.sets),
            "note": self.variant.note,
            "factor": self.factor,
            "real": {f: self.spread("real", f).json() for f in ("lost", "health_503", "served")},
            "model": {f: self.spread("model", f).json() for f in ("lost", "health_503", "served")},
            "model_unscaled_lost_mean": round(statistics.fmean(self.model_unscaled_lost), 3)
            if self.model_unscaled_lost else None,
            "gap": {"real_minus_model": round(diff, 3), "se": round(se, 3)},
            "real_lost_by_code": self.codes(),
            "real_deploys": [
                {"lost": r.lost, "health_503": r.health_503, "served": r.served,
                 "requests": r.requests, **r.detail}
                for r in self.real
            ],
        }


def compare(
    variant: Variant,
    factor: float,
    deploys: int,
    model_seeds: int,
    haproxy: str,
    progress: Callable[[str], None] | None = None,
) -> Comparison:
    """Run ``deploys`` real deploys (seeds 0..) and the model over ``model_seeds`` seeds."""
    real = []
    for seed in range(deploys):
        figures = real_deploy(variant, factor, seed, haproxy)
        real.append(figures)
        if progress:
            progress(f"{variant.name}: deploy {seed + 1}/{deploys}: lost {figures.lost} "
                     f"{figures.detail['lost_by_code']}, health 503 {figures.health_503}, "
                     f"served {figures.served}, {figures.detail['deploy_s']:.1f} s")
    seeds = range(model_seeds)
    return Comparison(variant, factor, real, model_deploys(variant, factor, seeds),
                      model_unscaled(variant, seeds))


def table(rows: Sequence[Comparison]) -> str:
    """The comparison as a Markdown table (the README shows it)."""
    factor = rows[0].factor if rows else DEFAULT_FACTOR
    head = [
        f"timings scaled by 1/{factor:g} (rps x{factor:g}); real: HAProxy, seeds 0..n-1; "
        "model: `testbed rollout` at the same scaled timings",
        "",
        "| configuration | lost per deploy, real (mean ± sd, min–max, n) "
        "| 502 per deploy, model | real − model (± se) | health 503s, real / model "
        "| served, real / model | real losses by HAProxy code |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    body = []
    for c in rows:
        diff, se = c.gap()
        rh, mh = c.spread("real", "health_503"), c.spread("model", "health_503")
        rs, ms = c.spread("real", "served"), c.spread("model", "served")
        codes = ", ".join(f"{k}: {v}" for k, v in c.codes().items()) or "-"
        body.append(
            f"| {c.variant.name} | {c.spread('real', 'lost').text()} "
            f"| {c.spread('model', 'lost').text()} | {diff:+.2f} (± {se:.2f}) "
            f"| {rh.mean:.1f} / {mh.mean:.1f} | {rs.mean:.0f} / {ms.mean:.0f} | {codes} |"
        )
    return "\n".join(head + body)


def run_all(
    variants: Sequence[Variant],
    factor: float,
    deploys: int,
    model_seeds: int,
    progress: Callable[[str], None] | None = None,
) -> list[Comparison]:
    """Every variant in turn (HAProxy installed first if missing)."""
    haproxy = ensure_haproxy()
    return [compare(v, factor, deploys, model_seeds, haproxy, progress) for v in variants]
