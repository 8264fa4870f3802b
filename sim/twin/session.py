"""A served world from start to report: open it, let a client use it, close it, say what happened.

``open_session`` is the one way in (``testbed serve``, the tests, and a ``compare`` that
runs a real process as the check): it maps the platform clock onto the wall clock,
builds the world, runs it instantly to the publish, and starts the HTTP front.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from platform_testbed.sim.config.scenario import Scenario
from platform_testbed.sim.config.truth import rule as rule_of
from platform_testbed.sim.publish.world import ground_truth
from platform_testbed.sim.twin.app import ServedApp
from platform_testbed.sim.twin.clock import Driver, Traffic, VirtualDriver
from platform_testbed.sim.twin.server import TwinServer
from platform_testbed.sim.vtime import PortProbe, SharedClock

__all__ = ["TIMES", "Session", "TimeMode", "open_session", "wall_epoch"]

TimeMode = Literal["virtual", "scaled"]
#: ``virtual``: the step's processes read the world's clock, which moves when they all wait
#: (``VirtualDriver``); ``scaled``: the world runs at ``speed`` x the wall clock (``Driver``).
TIMES: tuple[TimeMode, ...] = ("virtual", "scaled")


def wall_epoch(scenario: Scenario, now_ms: int) -> Scenario:
    """The scenario with its clock origin set so that its publish happens at ``now_ms``."""
    epoch = max(0, now_ms - round(scenario.publish.at_s * 1000))
    platform = scenario.platform.model_copy(update={"epoch_ms": epoch})
    return scenario.model_copy(update={"platform": platform})


@dataclass(eq=False)
class Session:
    """One served world: its app, the driver stepping it, the HTTP server in front."""

    app: ServedApp
    driver: Driver
    server: TwinServer
    token: str
    speed: float
    shared: SharedClock | None = None
    closed: bool = False

    @property
    def env_lines(self) -> list[str]:
        """What a client exports to reach this world (flyctl reads FLAPS_BASE_URL)."""
        return [
            # The API's base URL, as Fly's docs define it (``https://api.machines.dev``).
            f"export FLY_API_HOSTNAME={self.server.url}",
            f"export FLY_API_TOKEN={self.token}",
            f"export FLY_APP_NAME={self.app.app}",
            f"export FLAPS_BASE_URL={self.server.url}",
            f"export FLY_IMAGE_REF={self.app.world.release.ref}",
        ]

    def environment(self) -> dict[str, str]:
        """The same as ``env_lines``, for a child process's environment."""
        return dict(line.removeprefix("export ").split("=", 1) for line in self.env_lines)

    def close(self, finish: bool = True) -> None:
        """Stop serving and stepping; with ``finish`` the rest of the horizon runs instantly."""
        if self.closed:
            return
        self.closed = True
        try:
            self.server.close()
            self.driver.stop()
        finally:
            if self.shared is not None:
                self.shared.close()  # whatever the server did: no file left in /dev/shm
        if finish:
            self.driver.finish()

    def report(self) -> dict[str, Any]:
        """What the world did, the ground truth, and every request the client made."""
        app = self.app
        world = app.world
        bad = ground_truth(app.scenario, app.seed)
        epoch = app.scenario.platform.epoch_ms
        machines = []
        for machine in world.machines:
            events = machine.all_events or []
            machines.append({
                "id": machine.id,
                "state": machine.state,
                "image": machine.image.ref if machine.image is not None else None,
                "crashes": len(machine.crash_times),
                "release_crashes": sum(1 for i in machine.crash_images if i == world.release.ref),
                "events": [
                    {"type": e.type, "status": e.status, "timestamp": e.timestamp,
                     **({"exit_code": e.exit_code} if e.exit_code is not None else {})}
                    for e in reversed(events)
                ],
            })
        return {
            "schema_version": 1,  # sim/schemas/serve.schema.json
            "scenario": app.scenario.name,
            "seed": app.seed,
            "speed": self.speed,
            "epoch_ms": epoch,
            "publish_at_ms": epoch + round(app.start_s * 1000),
            "publish_started_ms": app.publish_started_ms,
            "ended_at_ms": app.now_ms(),
            "reached_horizon": self.driver.reached_horizon,
            "release_image": world.release.ref,
            "previous_image": world.previous.ref if world.previous else None,
            "ground_truth": {"bad": bad, "truth": app.scenario.truth,
                             "rule": rule_of(app.scenario.truth, app.scenario.truth_window_s)
                             + " (the same world, no check)"},
            **app.outcome(bad),
            "machines": machines,
            "requests": [
                {"method": r.method, "path": r.path, "status": r.status, "at_ms": r.at_ms}
                for r in self.server.requests
            ],
        }

    def recording_lines(self) -> list[str]:
        """The looks the client took, one recording line each (``checks.flyjson``'s format).

        A look is the fleet at the instant of a read (the list, one machine, a wait's
        answer: ``ServedApp._look``), every field as served (``config``, ``instance_id``...),
        which a replay ignores.
        """
        app = self.app
        publish = app.publish_started_ms
        if publish is None:
            publish = app.scenario.platform.epoch_ms + round(app.start_s * 1000)
        run = f"serve/seed={app.seed}"
        # Each machine's state before the release's first update, as the twin saw it
        # (``Look.pre_deploy``): on every line, so any line can start a replay.
        declared = {"pre_deploy": dict(app.pre_deploy)} if app.pre_deploy else {}
        return [
            json.dumps({"at_ms": look.at_ms, "publish_started_ms": publish,
                        "machines": list(look.machines), "run": run, **declared},
                       separators=(",", ":"))
            for look in app.looks
        ]


def open_session(
    scenario: Scenario,
    seed: int,
    *,
    speed: float = 1.0,
    token: str | None = None,
    port: int = 0,
    horizon_s: float | None = None,
    testbed_publishes: bool = False,
    clock: Callable[[], float] | None = None,
    time_mode: TimeMode = "scaled",
) -> Session:
    """Build the world, run it instantly to the publish, and serve it from there on.

    With the wall clock (``clock`` None) the platform's epoch is set so that the publish
    is now: at speed 1 an event's timestamp is the wall-clock time it happened. A given
    ``clock`` (tests) keeps the scenario's epoch, so the same calls give the same output.
    With ``time_mode`` "virtual" the world's clock is a ``SharedClock`` the step's processes
    read through the preload library (``sim.vtime``): it keeps the scenario's epoch (so the
    same seed gives the same timestamps, in the process's output too), starts at the
    publish, and moves only as ``VirtualDriver`` moves it.
    """
    if clock is None:
        clock = time.monotonic
        wall0 = clock()
        if time_mode == "scaled":
            scenario = wall_epoch(scenario, round(time.time() * 1000))
    else:
        wall0 = clock()
    if horizon_s is not None:
        scenario = scenario.model_copy(update={"horizon_s": horizon_s})
    app = ServedApp(scenario, seed, testbed_publishes=testbed_publishes)
    shared: SharedClock | None = None
    driver: Driver
    if time_mode == "virtual":
        start_ns = round(min(app.start_s, scenario.horizon_s) * 1e9)
        shared = SharedClock(realtime_base_ns=scenario.platform.epoch_ms * 1_000_000,
                             monotonic_base_ns=time.monotonic_ns() - start_ns, now_ns=start_ns)
        traffic = Traffic()
        try:
            driver = VirtualDriver(app, shared, traffic)
            server = TwinServer(driver, token or secrets.token_urlsafe(18), port)
        except BaseException:
            shared.close()  # no session owns it yet
            raise
    else:
        driver = Driver(app, speed=speed, clock=clock, wall0=wall0)
        server = TwinServer(driver, token or secrets.token_urlsafe(18), port)
    driver.start()
    server.start()
    if shared is not None:
        traffic.probe = PortProbe(server.port)
        thread = getattr(server, "_thread", None)  # the server's loop (named twin-http)
        native = getattr(thread, "native_id", None)
        traffic.threads = (native,) if isinstance(native, int) else ()
    return Session(app, driver, server, server.token, speed, shared)

