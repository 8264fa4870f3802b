"""Which events a machine writes for each change of its life: the event profiles.

This is the one place that says what a machine's event list holds. The machine
(``sim.platform.machine``) asks its profile for the events of each transition; replay
reads the same shapes back (``checks.flyjson``) and the test kit (``sim.kit.testing``) runs
the same machine. Change what a crash writes here and the simulator, its recordings and
the test kit all see it.

Evidence (see ``docs/fidelity.md`` for the full table; payloads in ``tests/data/fly/``):

- launch: ``launch/created`` source ``user`` -- superfly/docs@5c22c8ce
  ``reference/machines/_create_resp.erb``; a 2026 payload also shows a ``launch/pending``
  (flyd) before it (obeli-sk/components-flyio, not committed: its commit is unknown).
- start: ``start/started`` source ``flyd`` -- superfly/docs@5c22c8ce ``_get.erb``,
  ``_list_resp.erb``; obeli-sk/components-flyio@03503fd2 ``machine.rs`` l.652-704.
- update (deploy): ``update/replacing`` source ``user``, then the old process's
  ``exit/stopped`` -- superfly/docs@5c22c8ce ``_get.erb`` and @b24e244a ``get.html.md``.
  No public payload shows what follows a successful update; ``start/started`` is assumed.
- user restart: ``restart/stopping`` (user), ``exit/stopped`` (requested), ``restart/starting``
  (flyd), two ``start/started`` -- SecurityDiscovery/laravel-fly-machines@c9710fef README.
- crash and automatic restart: **not public**. No public payload shows the event list of
  a flyd crash loop, so each plausible sequence is its own profile, and results are
  shown across them (``scenarios/sweeps/sept25_unknowns.toml``).
- autostop and autostart by fly-proxy (source ``proxy``): **not public**; assumed shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

#: An event a transition writes: (type, status, source, carries the exit fields).
Spec = tuple[str, str, str, bool]


def _e(kind: str, status: str, source: str = "flyd") -> Spec:
    return (kind, status, source, False)


def _exit(source: str = "flyd") -> Spec:
    return ("exit", "stopped", source, True)


@dataclass(frozen=True, slots=True)
class Profile:
    """The events a machine writes, oldest first, for each transition of its life."""

    name: str
    summary: str
    sources: str
    #: The machine is created with its first image (before it boots).
    launch: tuple[Spec, ...]
    #: The publish replaces the image: written before the old process stops.
    update: tuple[Spec, ...]
    #: The old process stops because it was asked to (update, autostop, destroy).
    stop: tuple[Spec, ...]
    #: Written after the requested stop of an update, before the new image boots.
    replaced: tuple[Spec, ...]
    #: A start completes: the machine reads ``started``.
    started: tuple[Spec, ...]
    #: The app exits on its own (crash, OOM kill, or a clean exit).
    crash: tuple[Spec, ...]
    #: After the restart delay, flyd restarts the machine (it boots again).
    restart: tuple[Spec, ...]
    #: fly-proxy starts a stopped machine for a request (autostart).
    autostart: tuple[Spec, ...]
    #: fly-proxy stops an idle machine (autostop), before the requested stop.
    autostop: tuple[Spec, ...]
    #: The machine is deleted (the legacy rollback).
    destroy: tuple[Spec, ...]

    @property
    def per_crash(self) -> int:
        """Events one crash-and-restart cycle writes: how many crashes a capped list holds."""
        return len(self.crash) + len(self.restart) + len(self.started)


_COMMON_FLY = {
    "launch": (_e("launch", "created", "user"),),
    "update": (_e("update", "replacing", "user"),),
    "stop": (_exit(),),
    "replaced": (),
    "started": (_e("start", "started"),),
    "crash": (_exit(),),
    # Assumed (not public): fly-proxy's own events around autostop/autostart.
    "autostart": (_e("start", "starting", "proxy"),),
    "autostop": (_e("stop", "stopping", "proxy"),),
    "destroy": (_e("destroy", "destroyed", "user"),),
}

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            name="minimal",
            summary="the write-up's test platform: a crash writes exit, the restart writes start",
            sources="brief: crash-loop incident (the failing check's own test fixture)",
            launch=(_e("launch", "created", "user"),),
            update=(),
            stop=(_exit(),),
            replaced=(_e("update", "replaced", "user"),),
            started=(_e("start", "started"),),
            crash=(_exit(),),
            restart=(),
            autostart=(),
            autostop=(),
            destroy=(_e("destroy", "destroyed", "user"),),
        ),
        Profile(
            name="fly-exit-start",
            summary="Fly's launch/update events; a crash writes exit, the restart start/started",
            sources="superfly/docs@5c22c8ce reference/machines/_get.erb, _create_resp.erb; "
            "crash cycle not public: assumed",
            restart=(),
            **_COMMON_FLY,
        ),
        Profile(
            name="fly-restart-start",
            summary="as fly-exit-start, and flyd writes restart/starting before each restart",
            sources="laravel-fly-machines@c9710fef README (a user restart writes restart/starting); "
            "crash cycle not public: assumed",
            restart=(_e("restart", "starting"),),
            **_COMMON_FLY,
        ),
        Profile(
            name="fly-start-starting",
            summary="as fly-exit-start, and flyd writes start/starting before each restart",
            sources="issue 9 reports start/starting in payloads; no public payload found shows "
            "one (the project's tests/data/fly/SOURCES.md lists those read): assumed",
            restart=(_e("start", "starting"),),
            **_COMMON_FLY,
        ),
        Profile(
            name="fly-restart-double-start",
            summary="restart/starting, then start/started twice, as Fly's one public restart "
            "list shows",
            sources="laravel-fly-machines@c9710fef README (two start/started 226 ms apart); "
            "crash cycle not public: assumed",
            restart=(_e("restart", "starting"), _e("start", "started")),
            **_COMMON_FLY,
        ),
    )
}

#: The profile scenarios use unless ``[platform] events`` names another.
DEFAULT_PROFILE = "minimal"
