"""Which events a machine writes for each change of its life: the event profiles.

This is the one place that says what a machine's event list holds. The machine
(``sim.platform.machine``) asks its profile for the events of each transition; replay
reads the same shapes back (``checks.flyjson``) and the test kit (``sim.kit.testing``) runs
the same machine. Change what a crash writes here and the simulator, its recordings and
the test kit all see it.

Evidence (see ``docs/fidelity.md`` for the full table; payloads and tables in ``tests/data/fly/``):

- launch: ``launch/created`` source ``user`` -- superfly/docs@5c22c8ce
  ``reference/machines/_create_resp.erb``; a 2026 payload also shows a ``launch/pending``
  (flyd) before it (obeli-sk/components-flyio, not committed: its commit is unknown).
- start: ``start/started`` source ``flyd`` -- superfly/docs@5c22c8ce ``_get.erb``,
  ``_list_resp.erb``; obeli-sk/components-flyio@03503fd2 ``machine.rs`` l.652-704.
- update (deploy), event by event:

  - ``update/replacing`` source ``user`` -- superfly/docs@5c22c8ce ``_get.erb`` and
    @b24e244a ``get.html.md`` (a machine caught in ``replacing``).
  - the old process's requested-stop ``exit/stopped``: **not public: assumed**. The one
    public list with an update (``_get.erb``) shows after ``update/replacing`` a single
    ``exit/stopped`` (flyd) 1.5 s later with ``requested_stop: false``, exit 127,
    ``restarting: false``, and nothing after it: a machine that stopped after the update
    (exit 127 fits a new image that cannot start); it does not say which process exited,
    and it is not a requested stop.
  - ``start/started`` of the new image: **not public: assumed** (no public list shows
    what follows a successful update; ``_get.erb``'s shows no start).

- user restart: ``restart/stopping`` (user), ``exit/stopped`` (requested), ``restart/starting``
  (flyd), two ``start/started`` -- SecurityDiscovery/laravel-fly-machines@c9710fef README.
- crash and automatic restart: partly public. markmhendrickson/ateles' watchdog table
  (event log of 2026-08-31, ``tests/data/fly/ateles-watchdog-exit134-restart.txt``) shows
  flyd writing ``exit/stopped`` (``requested_stop=false``) and ``start/started`` 2 s
  later, and on another restart a ``restart/starting`` (flyd); a hand-picked excerpt, so
  one whole cycle's list is **not public**: each plausible sequence is its own profile,
  and results are shown across them (``scenarios/sweeps/sept25_unknowns.toml``).
- autostart by fly-proxy: ``start/starting`` source ``proxy``, then ``start/started``
  (flyd) -- the tables of neotoma PR #2099, #2291, bcwatson22/engaging-worker and
  edoardok-cmd/BoomCard (``tests/data/fly/SOURCES.md``).
- autostop by fly-proxy (``stop/stopping`` source ``proxy``, then the requested stop):
  **not public: assumed** (no public list shows one).
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
    # docs _create_resp.erb, _get.erb.
    "launch": (_e("launch", "created", "user"),),
    # docs _get.erb, get.html.md@b24e244a: the update's first event.
    "update": (_e("update", "replacing", "user"),),
    # The requested stop of the old process (update, autostop, destroy): not public:
    # assumed (the exit _get.erb shows after an update has requested_stop=false).
    "stop": (_exit(),),
    "replaced": (),
    # docs _get.erb, _list_resp.erb; after an update (the new image's start): not public:
    # assumed.
    "started": (_e("start", "started"),),
    # ateles' table: exit/stopped by flyd, requested_stop=false.
    "crash": (_exit(),),
    # neotoma #2099, #2291, engaging-worker, BoomCard: start/starting by the proxy.
    "autostart": (_e("start", "starting", "proxy"),),
    # Not public: assumed (no public list shows an autostop).
    "autostop": (_e("stop", "stopping", "proxy"),),
    # Not public: assumed (the legacy rollback's delete).
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
            sources="superfly/docs@5c22c8ce reference/machines/_create_resp.erb, _get.erb "
            "(launch/created, update/replacing, start/started); ateles 2026-08-31 (a flyd "
            "exit, then start/started); the update's requested-stop exit and the start after "
            "it, and a whole crash cycle: not public: assumed",
            restart=(),
            **_COMMON_FLY,
        ),
        Profile(
            name="fly-restart-start",
            summary="as fly-exit-start, and flyd writes restart/starting before each restart",
            sources="laravel-fly-machines@c9710fef README (a user restart writes restart/starting); "
            "ateles 2026-08-31 (flyd writes restart/starting on a restart); the update's "
            "requested-stop exit and start, and a whole crash cycle: not public: assumed",
            restart=(_e("restart", "starting"),),
            **_COMMON_FLY,
        ),
        Profile(
            name="fly-start-starting",
            summary="as fly-exit-start, and flyd writes start/starting before each restart",
            sources="issue 9 reports start/starting in payloads; public tables show one only "
            "from fly-proxy's autostart (neotoma #2099, #2291, engaging-worker), none before "
            "a flyd restart: not public: assumed",
            restart=(_e("start", "starting"),),
            **_COMMON_FLY,
        ),
        Profile(
            name="fly-restart-double-start",
            summary="restart/starting, then start/started twice, as Fly's one public restart "
            "list shows",
            sources="laravel-fly-machines@c9710fef README (two start/started 226 ms apart); "
            "the update's requested-stop exit and start, and a whole crash cycle: not "
            "public: assumed",
            restart=(_e("restart", "starting"), _e("start", "started")),
            **_COMMON_FLY,
        ),
    )
}

#: The profile scenarios use unless ``[platform] events`` names another.
DEFAULT_PROFILE = "minimal"
