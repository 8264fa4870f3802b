"""Hypothesis strategies for worlds on the real machine model, and one assertion for a check.

State a guarantee of your deploy health check in your own pytest file and get the
smallest world that breaks it::

    from platform_testbed.sim.kit.strategies import assert_guarantee, never_misses, worlds

    def test_my_check_never_passes_a_crashing_release():
        assert_guarantee(MyCheck(), never_misses, worlds=worlds(cap=5))

Hypothesis comes with the package (a dependency of the testbed; the ``dev`` extra adds
pytest). Worlds are laid out by ``sim.kit.testing.world``: the
simulator's own ``Machine`` (SimPy), every event kept.

Timings are whole milliseconds, exits any code 1-255 (signal deaths 128 + n among them,
137 without an OOM kill too), OOM kills under every restart policy, and the platform's
jitter with its seed. Yet a shrunk example reads as its rule: each value's first choices
are round (100 ms steps, whole seconds for slow crashes, exit 1, no jitter) and shrink
towards ``App``'s defaults, so a millisecond, an odd exit code or jitter appears in a
counterexample only when the rule needs it: ``App(cap=1)`` is "the incident's crash loop
with a one-event list". Walkthrough: ``docs/your-check.md``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from platform_testbed.checks import Check, Event, Look
from platform_testbed.checks.drive import CheckFailed, check_name
from platform_testbed.sim.config.profiles import DEFAULT_PROFILE, PROFILES
from platform_testbed.sim.config.scenario import Outcome
from platform_testbed.sim.config.truth import DEFAULT_TRUTH, Truth
from platform_testbed.sim.kit.testing import PUBLISH_MS, App, Run, World, drive_world, world

__all__ = [
    "EXIT_CODES",
    "JITTERS",
    "KINDS",
    "SLOW_CRASH_MS",
    "GuaranteeBroken",
    "always_decides",
    "apps",
    "assert_guarantee",
    "describe_run",
    "kind_of",
    "never_false_alarms",
    "never_misses",
    "outcome",
    "worlds",
]

T = TypeVar("T")

#: The kinds of app a world's machine can run, simplest first (shrinking goes left).
#: Crash times are before the platform's jitter (up to ``max(JITTERS)`` either way).
KINDS: tuple[str, ...] = (
    "healthy",  # never exits
    "crash-loop",  # crashes 0.1-5 s after every start; on-failure, 10 retries
    "crash-on-boot",  # the simulator's crash_on_boot: dies 1 ms-1 s into every start
    "slow-crash",  # crashes 15-120 s after every start: later than typical looks
    "oom",  # the OOM killer ends it (exit 137, oom_killed) after every start
    "clean-exit",  # exits 0: on-failure does not restart it, it stays stopped
    "give-up",  # a crash loop (or OOM) under on-failure, max_retries 0-3: the platform gives up
    "no-restart",  # restart policy "no": the first crash (or OOM) leaves it stopped
    "always",  # restart policy "always": restarted forever (crash or OOM), never reads stopped
)

#: A crash at least this long after each start is a slow crash: later than the 5-10 s
#: look delays of the built-in checks (assumed typical; ``slow-crash-loop`` uses 15 s).
SLOW_CRASH_MS = 15_000


# Cached: ``_world`` builds an ``apps`` strategy per world, and a millisecond range sorts
# thousands of values (measured: a 1,000-world ``find`` of slow crashes 23 s -> under 1 s).
@functools.cache
def _near(default: int, low: int, high: int, step: int, tick: int | None = None) -> SearchStrategy[int]:
    """Values in [low, high], shrinking to round ones near ``default`` before any other.

    Round: multiples of ``step``, nearest ``default`` first; then, with ``tick``, every
    multiple of ``tick`` (1: each millisecond), nearest ``default`` first. Hypothesis shrinks
    a ``sampled_from`` towards the list's head, so an off-grid value survives shrinking
    only where the failure needs it.
    """
    round_values = range(low, high + 1, step)
    fine = range(low, high + 1, tick) if tick is not None else round_values
    values = sorted(fine, key=lambda v: (v % step != 0, abs(v - default), v))
    return st.sampled_from(values)


def _ms(default: int, low: int, high: int, step: int = 100) -> SearchStrategy[int]:
    """A timing in whole milliseconds, round (``step``) values first."""
    return _near(default, low, high, step, tick=1)


#: Exit codes a crash draws, simplest first: 1 (the default), then the signal deaths
#: 128 + n that real apps show (137 SIGKILL without an OOM kill, 139 SIGSEGV, 143 SIGTERM,
#: 134 SIGABRT, 130 SIGINT), 2 and 127 (docs-get-exit-127.json), then the other signal
#: deaths 128 + 1..31 and every other code up to 255.
EXIT_CODES: tuple[int, ...] = tuple(dict.fromkeys(
    [1, 137, 139, 143, 134, 130, 2, 127, *range(129, 160), *range(3, 256)]
))

#: The platform's relative spread of boot and crash times (``[platform] jitter``): none
#: first, then the scenarios' default 5 %, then wider. At most 20 %, so a kind stays its
#: kind: a slow crash (15 s or later) still comes after the built-in checks' 10 s looks.
JITTERS: tuple[float, ...] = (0.0, 0.05, 0.01, 0.1, 0.2)


def _as_strategy(value: T | SearchStrategy[T] | None, default: SearchStrategy[T]) -> SearchStrategy[T]:
    if value is None:
        return default
    if isinstance(value, SearchStrategy):
        return value
    return st.just(value)


def _profiles() -> SearchStrategy[str]:
    # The default profile first: a counterexample only names a profile that matters.
    return st.sampled_from([DEFAULT_PROFILE, *sorted(p for p in PROFILES if p != DEFAULT_PROFILE)])


def _caps() -> SearchStrategy[int]:
    return _near(App.cap, 1, 10, 1)


def _jitters() -> SearchStrategy[float]:
    return st.sampled_from(JITTERS)


def kind_of(app: App) -> str:
    """Which of ``KINDS`` an app is (the classification ``apps()`` draws from)."""
    if app.crash_after_ms is None:
        return "healthy"
    if app.restart_policy == "no":
        return "no-restart"
    if app.restart_policy == "always" or (app.restart_policy is None and app.max_retries is None):
        return "always"
    if app.exit_code == 0 and not app.oom:
        return "clean-exit"
    if app.max_retries is not None and app.max_retries <= 3:
        return "give-up"
    if app.oom:
        return "oom"
    if app.crash_on_boot:
        return "crash-on-boot"
    if app.crash_after_ms >= SLOW_CRASH_MS:
        return "slow-crash"
    return "crash-loop"


@st.composite
def _app(  # noqa: PLR0917 -- st.composite passes a strategy's arguments positionally
    draw: st.DrawFn,
    kinds: Sequence[str],
    cap: SearchStrategy[int],
    events: SearchStrategy[str],
    restart_counter: SearchStrategy[bool],
    jitter: SearchStrategy[float],
) -> App:
    kind = draw(st.sampled_from(list(kinds)))
    crash_after: int | None
    if kind == "healthy":
        crash_after = None
    elif kind == "crash-on-boot":
        # Dies during its own startup: a millisecond in, or up to a second.
        crash_after = draw(_ms(500, 1, 1_000))
    elif kind == "slow-crash":
        crash_after = draw(_ms(SLOW_CRASH_MS, SLOW_CRASH_MS, 120_000, step=5_000))
    else:
        # Not below 100 ms: an ``always`` loop of 1 ms cycles writes 300,000 events in
        # a 600 s world, and nothing a check sees changes below a look's own spacing.
        crash_after = draw(_ms(App.crash_after_ms or 0, 100, 5_000))
    max_retries: int | None = App.max_retries
    if kind == "always":
        max_retries = None
    elif kind == "give-up":
        max_retries = draw(_near(0, 0, 3, 1))
    boot_ms = draw(_ms(App.boot_ms, 100, 3_000))
    restart_delay_ms = draw(_ms(App.restart_delay_ms, 0, 2_000))
    updated = draw(st.sampled_from([True, False]))
    platform = (draw(cap), draw(restart_counter), draw(events), draw(jitter))
    # How the app dies, drawn last: the draws above keep the order they had before exit
    # codes and OOM kills were drawn, so the seeded searches find what they found then.
    # The OOM killer ends a start under any restart policy; the "oom" kind is its crash
    # loop, and the policy kinds may draw it too.
    oom = kind == "oom" or (
        kind in ("give-up", "no-restart", "always") and draw(st.sampled_from([False, True]))
    )
    # An OOM kill's code is the model's (137); the field keeps its default then, so the
    # repr reads ``App(oom=True)``.
    exit_code = 0 if kind == "clean-exit" else 1 if oom else draw(st.sampled_from(EXIT_CODES))
    return App(
        boot_ms=boot_ms,
        crash_after_ms=crash_after,
        restart_delay_ms=restart_delay_ms,
        max_retries=max_retries,
        exit_code=exit_code,
        oom=oom,
        updated=updated,
        cap=platform[0],
        restart_counter=platform[1],
        events=platform[2],
        restart_policy="no" if kind == "no-restart" else None,
        crash_on_boot=kind == "crash-on-boot",
        jitter=platform[3],
    )


def apps(
    *,
    kinds: Sequence[str] = KINDS,
    cap: int | SearchStrategy[int] | None = None,
    events: str | SearchStrategy[str] | None = None,
    restart_counter: bool | SearchStrategy[bool] | None = None,
    jitter: float | SearchStrategy[float] | None = None,
) -> SearchStrategy[App]:
    """One machine's app: any of ``kinds``, millisecond timings, any cap 1-10 and event profile.

    ``cap``, ``events``, ``restart_counter`` and ``jitter`` take a value or a strategy
    (default: caps 1-10 shrinking towards 5, every profile in
    ``sim.config.profiles.PROFILES``, no counter, ``JITTERS``). Timings in whole ms: boot
    0.1-3 s, restart delay 0-2 s, crashes as ``KINDS`` says; a crash exits with any of
    ``EXIT_CODES``, and give-up, no-restart and always apps may be OOM-killed instead.
    """
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise ValueError(f"kinds: unknown {unknown} (known: {', '.join(KINDS)})")
    return _app(
        tuple(kinds),
        _as_strategy(cap, _caps()),
        _as_strategy(events, _profiles()),
        _as_strategy(restart_counter, st.just(False)),
        _as_strategy(jitter, _jitters()),
    )


@st.composite
def _world(  # noqa: PLR0917 -- st.composite passes a strategy's arguments positionally
    draw: st.DrawFn,
    machines: SearchStrategy[int],
    kinds: tuple[str, ...],
    cap: SearchStrategy[int],
    events: SearchStrategy[str],
    restart_counter: SearchStrategy[bool],
    jitter: SearchStrategy[float],
    same_app: bool,
    horizon_s: float,
    truth: Truth = DEFAULT_TRUTH,
) -> World:
    # One platform per world: every machine shares its cap, profile, counter and jitter.
    # The draws keep the order they had before the widening (new ones come last, here and
    # in ``_app``): a seeded search walks the same worlds first, so the counterexamples
    # that docs/your-check.md and the tests show stay the ones they show.
    app_strategy = apps(
        kinds=kinds,
        cap=draw(cap),
        events=draw(events),
        restart_counter=draw(restart_counter),
        jitter=0.0,
    )
    count = draw(machines)
    drawn = [draw(app_strategy)] * count if same_app else [draw(app_strategy) for _ in range(count)]
    # Jitter and its seed last: the apps' draws come first, so a world without jitter is
    # drawn (and shrunk) as one with, minus the tail. The seed only matters with jitter:
    # without, it stays 0 and out of the repr.
    spread = draw(jitter)
    seed = draw(st.integers(0, 2**32 - 1)) if spread else 0
    if spread:
        drawn = [replace(app, jitter=spread) for app in drawn]
    return world(*drawn, horizon_s=horizon_s, seed=seed, truth=truth)


def worlds(
    *,
    machines: int | SearchStrategy[int] | None = None,
    kinds: Sequence[str] = KINDS,
    cap: int | SearchStrategy[int] | None = None,
    events: str | SearchStrategy[str] | None = None,
    restart_counter: bool | SearchStrategy[bool] | None = None,
    jitter: float | SearchStrategy[float] | None = None,
    same_app: bool = False,
    horizon_s: float = 600.0,
    truth: Truth = DEFAULT_TRUTH,
) -> SearchStrategy[World]:
    """Worlds of 1-4 machines on one platform (cap, profile, jitter), each running one of ``kinds``.

    ``same_app=True`` runs one app on every machine, as one release does (such a world
    converts to a simulator scenario: ``World.scenario()``, run it with ``World.seed``).
    ``horizon_s``: how long after the publish a check may look (a look due later ends the
    run undecided). ``jitter=0.0`` keeps every timing exactly as drawn. ``truth`` judges
    each world (``World.bad``): ``serves`` (default) or ``crash`` (``sim.config.truth``).
    """
    apps(kinds=kinds)  # validate kinds now, not at the first draw
    return _world(
        _as_strategy(machines, st.integers(1, 4)),
        tuple(kinds),
        _as_strategy(cap, _caps()),
        _as_strategy(events, _profiles()),
        _as_strategy(restart_counter, st.just(False)),
        _as_strategy(jitter, _jitters()),
        same_app,
        horizon_s,
        truth,
    )


# --- what a run means, and guarantees -------------------------------------------------


def outcome(w: World, run: Run) -> Outcome:
    """The simulator's outcome for a run: caught, missed, passed, false_alarm, blind, undecided."""
    if run.verdict is None:
        return "undecided"
    if not run.verdict.judged:
        return "blind"
    if w.bad:
        return "missed" if run.verdict.ok else "caught"
    return "passed" if run.verdict.ok else "false_alarm"


def never_misses(w: World, run: Run) -> bool:
    """A bad release (by the world's truth) is never passed."""
    return outcome(w, run) != "missed"


def never_false_alarms(w: World, run: Run) -> bool:
    """A good release (by the world's truth) is never failed."""
    return outcome(w, run) != "false_alarm"


def always_decides(w: World, run: Run) -> bool:
    """The check reaches a verdict before the world's horizon."""
    return run.verdict is not None


class GuaranteeBroken(AssertionError):
    """A world in which a check broke the guarantee stated for it; the message shows it."""


def _since(at_ms: int) -> str:
    """Seconds after the publish: tenths when round, else to the millisecond."""
    ms = at_ms - PUBLISH_MS
    return f"{ms / 1000:+.1f}" if ms % 100 == 0 else f"{ms / 1000:+.3f}"


def _event(e: Event) -> str:
    at = _since(e.timestamp)
    if e.type != "exit":
        return f"{e.type} {at}" if (e.type, e.status) == ("start", "started") else f"{e.type}/{e.status} {at}"
    if e.requested_stop:
        return f"exit(stop) {at}"
    code = f"{e.exit_code}{' oom' if e.oom_killed else ''}"
    gave_up = "" if e.restarting or not e.is_crash else ", not restarting"
    return f"exit({code}{gave_up}) {at}"


def _look(number: int, look: Look) -> list[str]:
    at = f"look {number} at {_since(look.at_ms)} s"
    lines = []
    for i, m in enumerate(look.machines):
        head = at if i == 0 else " " * len(at)
        events = ", ".join(_event(e) for e in m.events) or "no events"
        counter = f" (restart counter {m.restart_counter})" if m.restart_counter is not None else ""
        lines.append(f"  {head}  {m.id} {m.state}{counter}: {events}")
    return lines


def describe_run(w: World, run: Run, max_looks: int = 12) -> str:
    """A run in a few lines: each look (events newest first, times from the publish), the verdict."""
    lines = [f"looks ({len(run.looks)}; each machine's events newest first, s after the publish):"]
    shown = list(enumerate(run.looks, start=1))
    if len(shown) > max_looks:
        half = max_looks // 2
        hidden = len(shown) - 2 * half
        for n, look in shown[:half]:
            lines += _look(n, look)
        lines.append(f"  … {hidden} more looks …")
        shown = shown[-half:]
    for n, look in shown:
        lines += _look(n, look)
    verdict = run.verdict
    crashed = ", ".join(
        f"{m.id} crashed {m.crashes_after_publish}×" for m in w.machines if m.crashes_after_publish)
    why = (crashed or f"a machine did not serve through the {w.truth_window_s:g} s window"
           if w.bad else "no machine crashed after the publish"
           + ("" if w.truth == "crash" else " and every one served through the window"))
    truth = f"the release is {'bad' if w.bad else 'good'} by the truth {w.truth}: {why}"
    if verdict is None:
        lines.append(f"verdict: none by the horizon -> undecided ({truth})")
    else:
        at = run.decided_at_ms
        when = f" at {_since(at)} s" if at is not None else ""
        machine = f" [{verdict.machine}]" if verdict.machine else ""
        lines.append(
            f"verdict: {'pass' if verdict.ok else 'fail'}{when}{machine} {verdict.reason!r}"
            f" -> {outcome(w, run)} ({truth})"
        )
    return "\n".join(lines)


def _what(guarantee: Callable[..., object]) -> str:
    name = getattr(guarantee, "__name__", "")
    doc = (getattr(guarantee, "__doc__", None) or "").strip().splitlines()
    label = name if name and name != "<lambda>" else "the guarantee"
    return f"{label} ({doc[0].rstrip('.')})" if doc else label


def assert_guarantee(
    check: Check,
    guarantee: Callable[[World, Run], object],
    *,
    worlds: SearchStrategy[World] | None = None,
    max_examples: int | None = None,
    seed: int | None = 0,
) -> None:
    """Search ``worlds`` for one where ``guarantee(world, run)`` fails; raise for the smallest.

    ``guarantee`` gets the world and the check's ``Run`` there (its looks and verdict)
    and returns a truthy value when it holds; returning False or raising
    ``AssertionError`` breaks it (``None``, as from a function of plain ``assert``s,
    holds). A check that raises or breaks the protocol breaks every guarantee.

    Raises ``GuaranteeBroken`` (an ``AssertionError``, so pytest shows it as a failed
    assert) whose message shows the smallest world as code (``repr``: paste it into
    ``sim.kit.testing``), the looks the check took and its verdict. ``max_examples`` defaults
    to the active hypothesis profile's; ``seed`` makes the search the same every run
    (``None``: hypothesis draws its own, and keeps failures in its example database).
    Call it from a plain test function, not from inside ``@given``.
    """
    strategy = worlds if worlds is not None else globals()["worlds"]()
    name = check_name(check)
    what = _what(guarantee)

    def search(w: World) -> None:
        try:
            run = drive_world(check, w)
        except CheckFailed as failed:
            raise GuaranteeBroken(
                f"{name} could not be driven in the world\n  {w!r}\n{failed}"
            ) from failed
        try:
            held = guarantee(w, run)
            why = ""
        except AssertionError as broken:
            held, why = False, f" ({broken})" if str(broken) else ""
        if held is None or held:
            return
        raise GuaranteeBroken(
            f"{name} breaks {what}{why} in the smallest world found:\n"
            f"  {w!r}\n{describe_run(w, run)}"
        )

    active = settings()  # the active profile (ci, dev, …) for everything not set here
    options = settings(
        active,
        deadline=None,  # a world runs a SimPy model: slow next to a pure function
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        max_examples=max_examples if max_examples is not None else active.max_examples,
        # Seeded: the same search every run, not one steered by earlier runs' failures.
        database=None if seed is not None else active.database,
    )
    test = given(strategy)(search)
    if seed is not None:
        test = hypothesis_seed(seed)(test)
    options(test)()

