"""An independent oracle for four of the checks and for the event profiles, written apart from ``sim``.

Small models, each from the rules as documented rather than from the code under test:

1. ``life``: a machine's whole, uncapped event history from a description of its app and
   platform, by Fly's restart rules (superfly/docs ``machine-restart-policy``: ``no``
   never restarts; ``always`` restarts whatever the exit code and the machine never reads
   stopped; ``on-failure`` restarts a non-zero exit, up to ``max_retries`` restarts within
   a 5-minute window) and an event profile given as plain data (which events each
   transition writes). Integer milliseconds throughout, no SimPy.
2. ``decide``: what the layered checks (``checks/layered.py``'s docstring) conclude, from
   those full histories plus the platform's cap. It never builds a capped event list:
   "visible at t" is "among the newest ``cap`` of the events written by t", an index
   range over the full history, and layer 3 is stated over the history itself:

   - ``timestamp`` fails a machine iff it crashed in (look 2, look 3] and the newest such
     crash is still among the newest ``cap`` events at look 3. (A crash at or before look
     2 that is still visible at look 3 was visible at look 2 too, since the window only
     slides forward; so "newest visible crash is newer than look 2's" is exactly this.)
   - ``count`` fails a machine iff more post-publish crashes sit in the newest-``cap``
     index range at look 3 than at look 2.

   Beside the checks' verdicts the oracle gives the uncapped truth (``crashed_between``),
   so a test can say where a check differs from it by design (the cap hides crashes).

3. ``decide_flyctl``: flyctl's deploy flow as plan.go runs it (its sources, cited below),
   and ``decide_min_healthy``: the ``min-healthy-time`` check's documented rules; both
   restated over the same full histories and cap (fly-go's
   ``MostRecentStartTimeAfterLaunch`` read from its source).

Imports: ``checks.model`` data types and the standard library only, never ``sim``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from platform_testbed.checks.model import Event

#: One event a transition writes: (type, status, source, carries the exit fields).
Spec = tuple[str, str, str, bool]
#: Transition name -> the events it writes, oldest first (the profile as plain data).
Profile = Mapping[str, Sequence[Spec]]

# --- the event profiles, as data written from the sources -----------------------------
#
# Written from the evidence tables of docs/fidelity.md ("Event profiles") and
# tests/data/fly/SOURCES.md, not from ``sim.config.profiles``: where the two differ,
# ``tests/test_oracle.py::test_the_oracles_profiles_are_the_simulators`` names the first
# difference, and one of them misreads its source. Each entry: (type, status, source,
# carries the exit fields). The transitions are the ten a machine's life has.

TRANSITIONS = ("launch", "update", "stop", "replaced", "started", "crash", "restart",
               "autostart", "autostop", "destroy")

#: docs `_create_resp.erb`, `_get.erb`: a created machine's one event, written by the user.
_LAUNCH = ("launch", "created", "user", False)
#: docs `_get.erb`, `_list_resp.erb`; obelisk `machine.rs` l.652-704: flyd writes start/started.
_STARTED = ("start", "started", "flyd", False)
#: docs `_get.erb` (docs-get-exit-127.json): an exit is `exit/stopped` by flyd with exit_event.
_EXIT = ("exit", "stopped", "flyd", True)
#: docs `_get.erb`, `get.html.md`@b24e244a: the user's update writes update/replacing first.
_REPLACING = ("update", "replacing", "user", False)
#: No source in docs/fidelity.md: the legacy rollback's delete, assumed destroy/destroyed (user).
_DESTROYED = ("destroy", "destroyed", "user", False)


def _fly(restart: tuple[Spec, ...]) -> dict[str, tuple[Spec, ...]]:
    """A Fly profile: the public launch/update/start/exit shapes; ``restart`` is the unknown."""
    return {
        "launch": (_LAUNCH,),
        "update": (_REPLACING,),
        # The old process's exit after update/replacing (docs `_get.erb`): a requested stop.
        "stop": (_EXIT,),
        "replaced": (),
        # "What follows a successful update: not public (a start/started is assumed)".
        "started": (_STARTED,),
        # Crash cycle not public: a crash writes the same exit/stopped as any exit.
        "crash": (_EXIT,),
        "restart": restart,
        # Autostop/autostart "not public: assumed": start/starting and stop/stopping by proxy.
        "autostart": (("start", "starting", "proxy", False),),
        "autostop": (("stop", "stopping", "proxy", False),),
        "destroy": (_DESTROYED,),
    }


#: Profile name -> transition -> the events it writes, oldest first.
PROFILES: dict[str, dict[str, tuple[Spec, ...]]] = {
    # The write-up's own test platform: a crash writes exit, the restart writes only the
    # start; the publish's update is one update/replaced (the incident looks,
    # ``sim.kit.testing.incident_looks``, are the brief's); no proxy events ("none in minimal").
    "minimal": {
        "launch": (_LAUNCH,), "update": (), "stop": (_EXIT,),
        "replaced": (("update", "replaced", "user", False),), "started": (_STARTED,),
        "crash": (_EXIT,), "restart": (), "autostart": (), "autostop": (),
        "destroy": (_DESTROYED,),
    },
    # "fly-exit-start (2)": exit, then start/started; nothing at the restart itself.
    "fly-exit-start": _fly(()),
    # "fly-restart-start (3, as the user restart without its user event)": laravel README's
    # restart/starting (flyd) before the start.
    "fly-restart-start": _fly((("restart", "starting", "flyd", False),)),
    # "fly-start-starting (3)": a start/starting (flyd) before the start (issue 9's report).
    "fly-start-starting": _fly((("start", "starting", "flyd", False),)),
    # "fly-restart-double-start (4, as the public restart list)": laravel README shows
    # restart/starting, then start/started twice (the second is the boot's).
    "fly-restart-double-start": _fly((("restart", "starting", "flyd", False),
                                      ("start", "started", "flyd", False))),
}


#: superfly/docs machine-restart-policy: max_retries counts restarts "within a 5-minute window".
RETRY_WINDOW_MS = 300_000
#: The exit code of an OOM kill (128 + SIGKILL).
OOM_EXIT_CODE = 137


@dataclass(frozen=True)
class AppRules:
    """One machine: how the new release behaves and how the platform restarts it."""

    boot_ms: int
    #: Exit this long after every start; None: stays up.
    crash_after_ms: int | None
    restart_delay_ms: int
    policy: str  # "no" | "always" | "on-failure"
    max_retries: int
    exit_code: int
    oom: bool
    #: True: the machine ran a healthy previous image, launched at 0, updated at the publish.
    updated: bool


@dataclass(frozen=True)
class History:
    """A machine's whole life: every event in order and every (ms, state) change in order."""

    id: str
    events: tuple[Event, ...]
    states: tuple[tuple[int, str], ...]

    def state_at(self, at_ms: int) -> str:
        """The state after every change at or before ``at_ms`` (the last one wins)."""
        current = "created"
        for t, state in self.states:
            if t > at_ms:
                break
            current = state
        return current

    def written_by(self, at_ms: int) -> int:
        """How many events were written at or before ``at_ms``."""
        return sum(1 for e in self.events if e.timestamp <= at_ms)


class _Log:
    """The history being written: events by transition name, and state changes."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.events: list[Event] = []
        self.states: list[tuple[int, str]] = []

    def write(self, t: int, transition: str,
              exit_fields: tuple[int, bool, bool, bool, int] | None = None) -> None:
        for kind, status, source, is_exit in self.profile[transition]:
            if is_exit:
                assert exit_fields is not None
                code, oom, requested, restarting, count = exit_fields
                self.events.append(
                    Event(kind, status, t, source, code, oom, requested, restarting, count)
                )
            else:
                self.events.append(Event(kind, status, t, source))

    def enter(self, t: int, state: str) -> None:
        self.states.append((t, state))

    @property
    def state(self) -> str:
        return self.states[-1][1] if self.states else "created"


def _publish(log: _Log, app: AppRules, publish_ms: int) -> None:
    """Up to the release's first boot: the previous image's life and the update, or a launch."""
    if app.updated:
        # The previous image: launched at 0, healthy, so started after one boot.
        log.write(0, "launch")
        log.enter(0, "starting")
        if app.boot_ms <= publish_ms:
            log.write(app.boot_ms, "started")
            log.enter(app.boot_ms, "started")
        # The publish: update events, the requested stop of the old process, then boot.
        log.write(publish_ms, "update")
        if log.state in ("starting", "started"):
            log.write(publish_ms, "stop", (0, False, True, False, 0))
            log.enter(publish_ms, "stopped")
        log.write(publish_ms, "replaced")
    else:
        log.write(publish_ms, "launch")
    log.enter(publish_ms, "starting")


def _restarts(app: AppRules, failed: bool, recent: int) -> bool:
    """superfly/docs machine-restart-policy, as written there."""
    if app.policy == "always":
        return True
    if app.policy == "no":
        return False
    return failed and recent < app.max_retries


def life(machine_id: str, app: AppRules, profile: Profile, publish_ms: int,
         horizon_ms: int) -> History:
    """The full history of one machine to ``horizon_ms``, by the documented restart rules."""
    log = _Log(profile)
    _publish(log, app, publish_ms)
    t, starts = publish_ms, 0
    recent: list[int] = []  # times of the restarts still in the retry window
    while True:
        t += app.boot_ms
        if t > horizon_ms:
            break
        starts += 1
        log.write(t, "started")
        log.enter(t, "started")
        if app.crash_after_ms is None:
            break
        t += app.crash_after_ms
        if t > horizon_ms:
            break
        code = OOM_EXIT_CODE if app.oom else app.exit_code
        recent = [r for r in recent if r > t - RETRY_WINDOW_MS]
        restarting = _restarts(app, code != 0 or app.oom, len(recent))
        log.write(t, "crash", (code, app.oom, False, restarting, starts - 1))
        # An ``always`` machine never reads stopped (superfly/docs restart-policy).
        log.enter(t, "starting" if app.policy == "always" else "stopped")
        if not restarting:
            break
        recent.append(t)
        t += app.restart_delay_ms
        if t > horizon_ms:
            break
        if profile["restart"] or log.state != "starting":
            log.write(t, "restart")
            log.enter(t, "starting")
    return History(machine_id, tuple(log.events), tuple(log.states))


@dataclass(frozen=True)
class Decision:
    """What a layered check concludes: ok, the machine it blames, the deciding layer, when."""

    ok: bool
    machine: str | None
    layer: str
    at_ms: int
    #: Look 2 and look 3 times when the check got that far (layer 3 compares them).
    look2_ms: int | None = None
    look3_ms: int | None = None


def _visible(h: History, at_ms: int, cap: int) -> range:
    """Indices into ``h.events`` of the newest ``cap`` events written by ``at_ms``."""
    n = h.written_by(at_ms)
    return range(max(0, n - cap), n)


def _gave_up(h: History, at_ms: int, cap: int) -> bool:
    """Stopped, and the newest exit written so far is a visible crash flyd will not restart."""
    if h.state_at(at_ms) not in ("stopped", "failed"):
        return False
    seen = _visible(h, at_ms, cap)
    exits = [i for i in range(h.written_by(at_ms)) if h.events[i].type == "exit"]
    return bool(exits) and exits[-1] in seen and h.events[exits[-1]].is_crash and not (
        h.events[exits[-1]].restarting
    )


def _crashes(h: History, lo_ms: int, hi_ms: int) -> list[int]:
    """Indices of crash exits written in (lo_ms, hi_ms]."""
    return [i for i, e in enumerate(h.events) if e.is_crash and lo_ms < e.timestamp <= hi_ms]


def crashed_between(h: History, lo_ms: int, hi_ms: int) -> bool:
    """The uncapped truth: did the machine crash in (lo_ms, hi_ms]?"""
    return bool(_crashes(h, lo_ms, hi_ms))


def _timestamp_fails(h: History, publish_ms: int, t2: int, t3: int, cap: int) -> bool:
    crashes = _crashes(h, t2, t3)
    return bool(crashes) and crashes[-1] in _visible(h, t3, cap)


def _count_fails(h: History, publish_ms: int, t2: int, t3: int, cap: int) -> bool:
    def count(at_ms: int) -> int:
        return sum(1 for i in _visible(h, at_ms, cap)
                   if h.events[i].is_crash and h.events[i].timestamp >= publish_ms)
    return count(t3) > count(t2)


def _ceil_ms(seconds: float) -> int:
    # The checks wait whole milliseconds, rounded up, at least one (checks/started.py).
    return max(1, math.ceil(round(seconds * 1000, 6)))


def decide(kind: str, machines: Sequence[History], publish_ms: int, cap: int, *,
           look_delay_s: float = 5.0, start_timeout_s: float = 60.0, poll_s: float = 1.0
           ) -> Decision:
    """The verdict of the ``count`` or ``timestamp`` check over full histories and a cap.

    Looks: at the publish, then every ``poll_s`` until all machines read started (or the
    start timeout); look 2 ``look_delay_s`` later; look 3 another ``look_delay_s`` later,
    only if look 2 shows a crash since the publish. A machine the platform gave up on
    fails any look; a machine not started at look 2 or 3 fails.
    """
    fails = {"count": _count_fails, "timestamp": _timestamp_fails}[kind]
    delay_ms = round(look_delay_s * 1000)

    def given_up(t: int) -> Decision | None:
        for h in machines:
            if _gave_up(h, t, cap):
                return Decision(False, h.id, "gave-up", t)
        return None

    def not_started(t: int) -> Decision | None:
        for h in machines:
            if h.state_at(t) != "started":
                return Decision(False, h.id, "look-twice", t)
        return None

    t = publish_ms
    while True:
        if found := given_up(t):
            return found
        if all(h.state_at(t) == "started" for h in machines):
            break
        waited_s = (t - publish_ms) / 1000
        if waited_s >= start_timeout_s:
            waiting = next(h for h in machines if h.state_at(t) != "started")
            return Decision(False, waiting.id, "start-timeout", t)
        t += _ceil_ms(min(poll_s, start_timeout_s - waited_s))
    t2 = t + delay_ms
    if found := given_up(t2) or not_started(t2):
        return found
    post_publish = [
        h for h in machines
        if any(h.events[i].is_crash and h.events[i].timestamp >= publish_ms
               for i in _visible(h, t2, cap))
    ]
    if not post_publish:
        return Decision(True, None, "look-twice", t2, t2)
    t3 = t2 + delay_ms
    if found := given_up(t3) or not_started(t3):
        return Decision(found.ok, found.machine, found.layer, t3, t2, t3)
    for h in machines:
        if fails(h, publish_ms, t2, t3, cap):
            return Decision(False, h.id, "crashes-since-publish", t3, t2, t3)
    return Decision(True, None, "crashes-since-publish", t3, t2, t3)


# --- flyctl's smoke check, from plan.go's deploy flow ----------------------------------
#
# Written from superfly/flyctl@ad0172fa as excerpted in the evidence (plan.go
# ``updateProcessGroup``, ``updateMachineWChecks``, ``waitForMachineState``;
# machines_launchinput.go ``shouldSkipLaunch``; machines_deploymachinesapp.go
# ``warnAboutIncorrectListenAddress``; leasable_machine.go ``WaitForState``,
# ``WaitForSmokeChecksToPass``; fly-go ``flaps_machines_wait.go``; jpillora/backoff v1.0.0)
# and docs/fidelity.md's flyctl-smoke row, never from checks/flyctl.py. Per machine:
#
# 1. ``shouldSkipLaunch`` on the state *before the publish* (plan.go l.369-374: captured
#    pre-deploy): a machine that existed before the publish is skipped unless it was
#    started, starting or failed; a new machine (nil) is launched. A skipped machine is
#    excused at the first look (its wait can only end in a state flyctl accepts).
# 2. ``waitForMachineState``: three flaps long polls (started, stopped, suspended) that
#    the server answers when the machine *enters* the state, so an entry at any moment
#    after the publish counts (``wait_reading="long-poll"``); the sampled reading
#    (``"sampled"``: the state as read at a look) is the earlier port's. plan.go notices a
#    finished poll only at its 1 s ticks (l.791-807), counted from the publish, so the
#    flow goes on at the first tick at or after the entry. No entry by the 5-minute
#    timeout: a wait timeout (recoverable: ``decide_flyctl_rollout`` below retries it;
#    this at-publish flow, a driver's that cannot update, does not).
# 3. ``warnAboutIncorrectListenAddress`` (l.1316-1383), for the first launched machine of
#    the process group to get there only: it returns at once when the machine is
#    listening or when ``GetProcesses`` fails, otherwise after ``listen_wait_s``. Not
#    public, read as docs/fidelity.md does: a started machine listens; on one not started
#    the call fails (``listen_wait_s`` 0, the default: flyctl's code path) or answers no
#    listener (15 s, the check's ``listen_reading = "no-listener"``); the state is read
#    when the wait begins.
# 4. ``WaitForSmokeChecksToPass``: a ``window_s`` context from there, read at once and
#    after each backoff (jitter off: jpillora's upper bounds, 0.5 s doubling to 2 s); a
#    read passes on uptime over ``min_uptime_s`` and no constant restart, fails on a
#    constant restart; the context running out passes.
#
# Looks are shared: the check looks at the soonest tick, read or deadline of any undecided
# machine (while a machine waits, every tick is looked at), and sees every machine.

ASLEEP = ("stopped", "suspended")
#: shouldSkipLaunch (machines_launchinput.go l.306): the pre-deploy states that are launched.
LAUNCHED = ("started", "starting", "failed")


def pre_deploy_state(h: History, publish_ms: int) -> str | None:
    """The machine's state just before the publish; None for a machine the publish created."""
    if not any(t < publish_ms for t, _ in h.states):
        return None
    return h.state_at(publish_ms - 1)


def visible_events(h: History, at_ms: int, cap: int) -> list[Event]:
    """The newest ``cap`` events written by ``at_ms``, oldest first."""
    return [h.events[i] for i in _visible(h, at_ms, cap)]


def start_after_launch(events: Sequence[Event]) -> int | None:
    """fly-go ``MostRecentStartTimeAfterLaunch`` over an oldest-first list (its errors: None).

    Read from fly-go@22d6e518 ``machine_types.go``: a newest-first scan that stops once it
    has seen a start and a launch, keeping the last index of each type it passed. So it
    returns the *oldest* start after the newest launch, and errors when there is no
    launch, no start after it, or when the oldest exit after that launch is newer than
    that start.
    """
    launches = [i for i, e in enumerate(events) if e.type == "launch"]
    if not launches:
        return None
    after = range(launches[-1] + 1, len(events))
    starts = [i for i in after if events[i].type == "start"]
    if not starts:
        return None
    exits = [i for i in after if events[i].type == "exit"]
    if exits and exits[0] > starts[0]:
        return None
    return events[starts[0]].timestamp


def constantly_restarting(events: Sequence[Event]) -> bool:
    """flyctl ``isConstantlyRestarting``: the newest exit is a restarting, non-zero exit past restart 1."""
    exits = [e for e in events if e.type == "exit"]
    if not exits:
        return False
    newest = exits[-1]
    return (not newest.requested_stop and newest.restarting and newest.restart_count > 1
            and (newest.exit_code or 0) != 0)


def decide_flyctl(  # noqa: PLR0915 - one loop, step by step as flyctl's flow reads
        machines: Sequence[History], publish_ms: int, cap: int, horizon_ms: int, *,
                  window_s: float = 10.0, min_uptime_s: float = 10.0,
                  backoff_min_s: float = 0.5, backoff_max_s: float = 2.0,
                  wait_timeout_s: float = 300.0,
                  wait_states: Sequence[str] = ("started", "stopped", "suspended"),
                  poll_s: float = 1.0, wait_reading: str = "long-poll",
                  listen_wait_s: float = 0.0) -> Decision | None:
    """flyctl-smoke's verdict, or None when its next look falls after ``horizon_ms``."""
    window, uptime = round(window_s * 1000), round(min_uptime_s * 1000)
    tick, listen = round(poll_s * 1000), round(listen_wait_s * 1000)
    timeout_at = publish_ms + round(wait_timeout_s * 1000)
    smoke_at: dict[str, int] = {}  # when WaitForSmokeChecksToPass starts
    due: dict[str, int] = {}
    failed_reads: dict[str, int] = {}
    done: dict[str, str] = {}
    listened = False  # one process group: the listen-address wait runs once

    def next_tick(t: int) -> int:
        return publish_ms + (t - publish_ms) // tick * tick + tick

    def ceil_tick(t: int) -> int:
        return publish_ms + -(-(t - publish_ms) // tick) * tick

    t = publish_ms
    while t <= horizon_ms:
        for h in machines:
            if h.id in done:
                continue
            if t == publish_ms:
                before = pre_deploy_state(h, publish_ms)
                if before is not None and before not in LAUNCHED:
                    done[h.id] = "skipped"
                    continue
            if h.id not in smoke_at:
                if wait_reading == "long-poll":
                    # The entry as this look shows it (the rollout's reading below): the
                    # server's long poll knows every entry, a check only what its looks
                    # keep, and a cap of 1 under a sub-second crash loop drops the entry
                    # into started before the next tick (found by hypothesis, 2 in 7 runs).
                    entered, _ = _seen_entry(h, wait_states, publish_ms, t, cap)
                    settled = None if entered is None else ceil_tick(entered)
                else:
                    settled = t if h.state_at(t) in wait_states else None
                if settled is None or settled > t:
                    if t >= timeout_at:
                        return Decision(False, h.id, "wait-timeout", t)
                    due[h.id] = min(next_tick(t), timeout_at) if settled is None else settled
                    continue
                # Every tick is looked at while a machine waits, so settled == t here.
                start = t
                if not listened:
                    listened = True
                    if h.state_at(t) != "started":
                        start = t + listen
                smoke_at[h.id] = due[h.id] = start
                failed_reads[h.id] = 0
            if t >= smoke_at[h.id] + window:
                done[h.id] = "window-ran-out"
                continue
            if t < due[h.id]:
                continue
            seen = visible_events(h, t, cap)
            if constantly_restarting(seen):
                return Decision(False, h.id, "constantly-restarting", t)
            started = start_after_launch(seen)
            if started is not None and t - started > uptime:
                done[h.id] = "uptime"
                continue
            backoff_s = min(backoff_min_s * 2 ** failed_reads[h.id], backoff_max_s)
            due[h.id] = t + round(backoff_s * 1000)
            failed_reads[h.id] += 1
        if len(done) == len(machines):
            layers = set(done.values())
            layer = ("window-ran-out" if "window-ran-out" in layers
                     else "skipped" if layers == {"skipped"} else "uptime")
            return Decision(True, None, layer, t)
        t = min(
            min(due[h.id], smoke_at[h.id] + window) if h.id in smoke_at else due[h.id]
            for h in machines if h.id not in done
        )
    return None


# --- flyctl's rolling update: a pool at a time, cancelled at the first error, retried ----
#
# Written from plan.go's text (superfly/flyctl@ad0172fa; excerpts in the evidence
# 04-flyctl-deploy-flow.md §2-3), never from checks/flyctl.py:
#
# - ``updateExistingMachinesWRecovery`` l.664 reads the app state (``List``) before any
#   update: that is each machine's ``originalMachine`` (its pre-deploy state).
#   ``shouldSkipLaunch`` skips a machine that existed and was not started, starting or
#   failed; a machine the deploy creates (nil) is launched.
# - ``updateMachinesWRecovery`` l.233-267: ``isWarm`` is true for every launched machine
#   (its new state is set to "started", l.672-674); warm machines go through an errgroup
#   of limit ``getPoolSize`` (ceil(0.33 x warm); a count when max_unavailable >= 1), cold
#   ones through one of min(cold, 30), both at once. An errgroup limit starts the next
#   machine as soon as any running one returns. A cold machine is updated, waits for a
#   settled state (it is stopped: at once) and returns, so every cold machine is updated
#   in the first instant.
# - ``updateProcessGroup`` l.386-390: once a machine has failed, ``gCtx`` is cancelled:
#   a machine not yet started logs "skipping machine update due to earlier failure" and
#   is never updated; running ones stop where they are. Nothing is rolled back.
# - ``updateMachineWChecks`` l.613-636: a wait timeout is returned as it is (recoverable);
#   a smoke-check failure is wrapped in ``unrecoverableError``.
# - l.283-344: after a recoverable failure, with pushForward: loop { if attempts >
#   deployRetries: return the first error; re-read the state; run the update again
#   (every machine: one already updated is not updated again, as its config is the same,
#   l.830-832, but waits and is checked afresh; one that passed its checks is done,
#   ``healthChecksPassed`` being package state); on success stop; on an unrecoverable
#   error return it; attempts += 1; sleep 1 s }. The first retry therefore runs at once.
#   Machines are taken in id order (l.306-310 sorts them; the map iteration after it is
#   random in Go: assumed id order here too).
# - ``warnAboutIncorrectListenAddress`` runs once per deploy (``md.listenAddressChecked``
#   survives the retries).
#
# Each machine's own steps are those of ``decide_flyctl`` above, counted from the moment
# its wait began (its update, or the retry's start). Looks are shared as there.

NEVER_MS = 10**15  # an update time past any horizon: the machine keeps its previous life


def _seen_entry(h: History, states: Sequence[str], since_ms: int, at_ms: int,
                cap: int) -> tuple[int | None, str]:
    """The earliest entry into ``states`` since ``since_ms`` that a look at ``at_ms`` shows.

    flyctl's long poll is answered by the server, which knows every entry; a check reads
    it from its looks: the machine's state at the look, and the events still among the
    newest ``cap`` whose status is a wanted state (an exit with requested_stop is the
    update's own stop: not an entry; docs/fidelity.md). An entry the cap has already
    dropped is not seen.
    """
    found: tuple[int, str] | None = None
    if h.state_at(at_ms) in states:
        found = (at_ms, h.state_at(at_ms))
    for e in visible_events(h, at_ms, cap):
        entering = e.status in states and not (e.type == "exit" and e.requested_stop)
        if entering and e.timestamp >= since_ms and (found is None or e.timestamp < found[0]):
            found = (e.timestamp, e.status)
    return (None, "") if found is None else found


def decide_flyctl_rollout(  # noqa: PLR0915 - plan.go's passes, step by step
        ids: Sequence[str], life_at: Callable[[str, int], History], publish_ms: int, cap: int,
        horizon_ms: int, *, window_s: float = 10.0, min_uptime_s: float = 10.0,
        backoff_min_s: float = 0.5, backoff_max_s: float = 2.0, wait_timeout_s: float = 300.0,
        wait_states: Sequence[str] = ("started", "stopped", "suspended"), poll_s: float = 1.0,
        wait_reading: str = "long-poll", listen_wait_s: float = 0.0,
        max_unavailable: float = 0.33, deploy_retries: int = 1,
        updates: dict[str, int] | None = None,
        draw: Callable[[str, int], float] | None = None) -> Decision | None:
    """flyctl-smoke's verdict when it rolls the release out, or None past ``horizon_ms``.

    ``life_at(id, t)``: the machine's whole history when the release reaches it at ``t``
    (``NEVER_MS``: never). ``updates``, when given, receives each machine's update time.
    ``draw(id, k)``: the ``rand.Float64()`` of jpillora/backoff v1.0.0 ``ForAttempt`` for
    the machine's wait after read k (None: no jitter, the upper bounds). ForAttempt:
    ``durf = min * 2^k``; jittered ``durf = rand * (durf - min) + min``; then capped at max.
    A wait ending between whole milliseconds is looked at on the next one.
    """
    window, uptime = round(window_s * 1000), round(min_uptime_s * 1000)
    tick, listen = round(poll_s * 1000), round(listen_wait_s * 1000)
    wait_ms = round(wait_timeout_s * 1000)
    lives = {i: life_at(i, NEVER_MS) for i in ids}
    new = {i: not any(t <= publish_ms for t, _ in lives[i].states) for i in ids}
    before = {i: lives[i].state_at(publish_ms) for i in ids}
    cold = [i for i in ids if not new[i] and before[i] not in LAUNCHED]
    warm = [i for i in ids if i not in cold]
    limit = int(max_unavailable) if max_unavailable >= 1 else math.ceil(len(warm) * max_unavailable)
    updated: dict[str, int] = {} if updates is None else updates
    done: dict[str, str] = {}
    wait_from: dict[str, int] = {}
    smoke_at: dict[str, int] = {}
    due: dict[str, float] = {}
    failed_reads: dict[str, int] = {}
    running: list[str] = []
    queue: list[str] = []
    listened = False
    retrying, attempts = False, 0
    retry_at: int | None = None
    first_error: str | None = None

    def go(i: str, t: int) -> None:
        running.append(i)
        wait_from[i] = due[i] = t
        smoke_at.pop(i, None)
        if i not in updated:
            updated[i] = t
            lives[i] = life_at(i, t)

    def fill(t: int) -> None:
        while len(running) < limit and queue:
            go(queue.pop(0), t)

    def update_pass(t: int) -> None:
        for i in cold:
            if i not in updated:
                updated[i] = t
                lives[i] = life_at(i, t)
                done[i] = "skipped"
        running.clear()
        queue[:] = [i for i in warm if i not in done]
        fill(t)

    t = publish_ms
    update_pass(t)
    while t <= horizon_ms:
        if retry_at is not None and t >= retry_at:
            retry_at = None
            if attempts > deploy_retries:
                return Decision(False, first_error, "wait-timeout", t)
            update_pass(t)
        again = True
        while again:
            again = False
            for i in list(running):
                h = lives[i]
                start = wait_from[i]
                if i not in smoke_at:
                    settled_state = h.state_at(t)
                    if wait_reading == "long-poll":
                        entered, settled_state = _seen_entry(h, wait_states, start, t, cap)
                        settled = (None if entered is None
                                   else start + -(-(entered - start) // tick) * tick)
                        if settled == t:
                            settled_state = h.state_at(t)
                    else:
                        settled = t if h.state_at(t) in wait_states else None
                    if settled is None or settled > start + wait_ms or settled > t:
                        # Not answered by this look (or only after the timeout).
                        if t >= start + wait_ms:
                            # A recoverable error: the group is cancelled, then retried.
                            first_error = first_error or i
                            running.clear()
                            queue.clear()
                            if deploy_retries == 0:
                                return Decision(False, i, "wait-timeout", t)
                            if not retrying:
                                retrying = True
                                update_pass(t)
                            else:
                                attempts += 1
                                retry_at = t + 1000
                            again = True
                            break
                        due[i] = (min(start + ((t - start) // tick + 1) * tick, start + wait_ms)
                                  if settled is None or settled > start + wait_ms else settled)
                        continue
                    # The poll's answer may be read late (at a look after its tick): the
                    # smoke check then began at the tick, and reads at once.
                    begin = settled
                    if not listened:
                        listened = True
                        if settled_state != "started":
                            begin = settled + listen
                    smoke_at[i] = due[i] = begin
                    failed_reads[i] = 0
                if t >= smoke_at[i] + window and failed_reads[i] > 0:
                    done[i] = "window-ran-out"
                elif t < due[i]:
                    continue
                else:
                    seen = visible_events(h, t, cap)
                    if constantly_restarting(seen):
                        return Decision(False, i, "constantly-restarting", t)
                    started = start_after_launch(seen)
                    if started is not None and t - started > uptime:
                        done[i] = "uptime"
                    else:
                        k = failed_reads[i]
                        durf = backoff_min_s * 2 ** k
                        if draw is not None:
                            durf = draw(i, k) * (durf - backoff_min_s) + backoff_min_s
                        # Reads follow one another by the backoff from the due time (a read
                        # taken on the next whole ms does not shift the ones after it).
                        due[i] += min(durf, backoff_max_s) * 1000
                        failed_reads[i] += 1
                        continue
                running.remove(i)
                before_fill = len(running)
                fill(t)
                again = again or len(running) > before_fill
        if len(done) == len(ids):
            layers = set(done.values())
            layer = ("window-ran-out" if "window-ran-out" in layers
                     else "skipped" if layers == {"skipped"} else "uptime")
            return Decision(True, None, layer, t)
        times = [min(due[i], smoke_at[i] + window) if i in smoke_at else due[i] for i in running]
        if retry_at is not None:
            times.append(retry_at)
        t += max(1, math.ceil(round(min(times) - t, 6)))
    return None


# --- Nomad min_healthy_time / Kubernetes minReadySeconds, from the documented rules ------
#
# checks/minhealthy.py's docstring: judge the machines the publish touched (an event at or
# after the publish); a machine's uptime is the time since its newest start, if it reads
# started and that start came after the publish; pass once every judged machine has been
# up ``min_healthy_s``. Nomad: a machine the platform gave up on fails at once; the
# deadline is ``healthy_deadline_s`` from the publish. Kubernetes: the deadline is
# ``progress_deadline_s`` after the last look with more ready (up) or available (up long
# enough) machines than the look before. Looks every ``poll_s``, sooner when the least-up
# machine could reach the minimum or the deadline comes first.


def _uptime(h: History, at_ms: int, cap: int, publish_ms: int) -> int | None:
    if h.state_at(at_ms) != "started":
        return None
    starts = [e.timestamp for e in visible_events(h, at_ms, cap) if e.type == "start"]
    if not starts or starts[-1] < publish_ms:
        return None
    return at_ms - starts[-1]


def decide_min_healthy(machines: Sequence[History], publish_ms: int, cap: int, horizon_ms: int, *,
                       min_healthy_s: float = 10.0, healthy_deadline_s: float = 300.0,
                       progress_deadline_s: float = 600.0, rule: str = "nomad",
                       poll_s: float = 1.0) -> Decision | None:
    """min-healthy-time's verdict, or None when its next look falls after ``horizon_ms``."""
    need = round(min_healthy_s * 1000)
    last_progress, ready_before, available_before = publish_ms, 0, 0
    t = publish_ms
    while t <= horizon_ms:
        judged = [h for h in machines
                  if any(publish_ms <= e.timestamp <= t for e in h.events)]
        ups = [_uptime(h, t, cap, publish_ms) for h in judged]
        ready = sum(1 for up in ups if up is not None)
        available = sum(1 for up in ups if up is not None and up >= need)
        if ready > ready_before or available > available_before:
            last_progress = t
        ready_before, available_before = ready, available
        if rule == "nomad":
            for h in judged:
                if _gave_up(h, t, cap):
                    return Decision(False, h.id, "task-failed", t)
        # Not up counts as -1: below any uptime; the first of equals is the one named.
        scores = [-1 if up is None else up for up in ups]
        least = min(range(len(judged)), key=scores.__getitem__, default=None)
        least_up = None if least is None else scores[least]
        if least_up is not None and least_up >= need:
            return Decision(True, None, "min-healthy-time", t)
        if rule == "nomad":
            deadline, layer = publish_ms + round(healthy_deadline_s * 1000), "healthy-deadline"
        else:
            deadline, layer = last_progress + round(progress_deadline_s * 1000), "progress-deadline"
        if t >= deadline:
            return Decision(False, None if least is None else judged[least].id, layer, t)
        wait = round(poll_s * 1000)
        if least_up is not None and least_up >= 0:
            wait = min(wait, need - least_up)
        t += _ceil_ms(min(wait, deadline - t) / 1000)
    return None
