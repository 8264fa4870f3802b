"""The search: hypothesis' own engine finds, then shrinks, each kind of world that fools a check.

A world fools a check when the run's outcome disagrees with the ground truth: ``missed``,
``false_alarm``, ``undecided`` or ``error`` (``blind`` is a check declining to judge, not a
wrong verdict). Each wrong run gets a *kind*: the outcome plus a diagnosis of why, read
from the run's trace (a crash slower than the looks, hidden by the event list's cap, a
machine the platform gave up on, or in plain view). The hunt is a loop of
``hypothesis.find``: each round looks for a world of a kind not found yet and shrinks it
to its smallest, until a round's budget finds nothing new; first among worlds that keep
the base's app behaviour, then among all.

Determinism: every round's hypothesis seed comes from one ``random.Random(seed)``, the
database is off and nothing reads the wall clock, so a seed gives the same worlds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, Phase, Verbosity, find, settings
from hypothesis.configuration import set_hypothesis_home_dir, storage_directory
from hypothesis.errors import NoSuchExample
from hypothesis.strategies import SearchStrategy

from platform_testbed.checks import Check, Event
from platform_testbed.sim.checkload.budget import DEFAULT_CHECK_BUDGET, CheckBudget
from platform_testbed.sim.checkload.loader import load_checks
from platform_testbed.sim.config.scenario import Scenario
from platform_testbed.sim.hunt.space import World, apply, changes_text, worlds
from platform_testbed.sim.publish.compare import RunStep
from platform_testbed.sim.publish.world import RunResult, ground_truth, run
from platform_testbed.sim.runtime.frames import FLOAT, OUTCOME, TEXT, frame
from platform_testbed.sim.runtime.signals import reraise_pending

if TYPE_CHECKING:
    import pandas as pd

#: Outcomes that disagree with the ground truth (see ``RunResult.outcome``).
WRONG = ("missed", "false_alarm", "undecided", "error")
#: Kinds are few (``diagnose``); this bounds the rounds even for a check that never settles.
MAX_KINDS = 16

#: A check built with one world's ``[check]`` options (its timing varies with the world).
CheckFactory = Callable[[Mapping[str, Any]], Check]
#: Told after every world tried: (round, worlds tried this round, kinds found, shrinking?).
Progress = Callable[[int, int, int, bool], None]
#: ``HuntResult.to_pandas()``: one row per world found; ``changes`` as the summary table
#: shows them (``key=value, ...``, empty for the base itself).
FOUND_DTYPES: Mapping[str, str] = MappingProxyType({
    "outcome": OUTCOME, "kind": TEXT, "changes": TEXT, "decided_at_s": FLOAT, "why": TEXT,
    "reason": TEXT,
})


class SpecChecks:
    """A check spec as a ``CheckFactory``: built once per distinct ``[check]`` options (a
    world's timing decides the check's), then reused (testbed hunt and ``sim.api.hunt``)."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.built: dict[tuple[tuple[str, Any], ...], Check] = {}

    def __call__(self, options: Mapping[str, Any]) -> Check:
        key = tuple(sorted(options.items()))
        if key not in self.built:
            self.built[key] = load_checks([self.spec], options)[0]
        return self.built[key]


@dataclass(frozen=True, slots=True)
class Found:
    """One smallest world that fools the check, and what the check did in it."""

    world: World
    scenario: Scenario
    outcome: str
    diagnosis: str
    why: str
    reason: str
    decided_at_s: float | None


@dataclass(frozen=True, slots=True)
class HuntResult:
    """Everything a hunt found, in the order it found it, and what it tried."""

    check: str
    base: Scenario
    seed: int
    budget: int
    found: tuple[Found, ...]
    worlds_tried: int
    rounds: int

    def to_pandas(self) -> pd.DataFrame:
        """The worlds found as a DataFrame, in the order found (needs the ``pandas`` extra)."""
        rows = [{"outcome": f.outcome, "kind": f.diagnosis, "decided_at_s": f.decided_at_s,
                 "changes": changes_text(self.base, f.world),
                 "why": f.why, "reason": f.reason} for f in self.found]
        return frame(rows, FOUND_DTYPES)


def _crash_times_ms(result: RunResult, since_ms: int) -> list[int]:
    assert result.trace is not None
    return sorted(
        e.timestamp
        for m in result.trace.machines
        for e in m.events
        if e.is_crash and e.timestamp >= since_ms
    )


def _gave_up(events: tuple[Event, ...], at_ms: int) -> bool:
    exits = [e for e in events if e.type == "exit" and e.timestamp <= at_ms]
    return bool(exits) and exits[-1].is_crash and not exits[-1].restarting


def diagnose(scenario: Scenario, result: RunResult) -> tuple[str, str]:
    """Why a wrong run went wrong: a short code and a sentence, read from its trace."""
    outcome = result.outcome
    if outcome == "error":
        return "raised", f"the check failed: {result.error}"
    if outcome == "undecided":
        return "no-verdict", f"the check gave no verdict within the {scenario.horizon_s:g} s horizon"
    assert result.trace is not None
    assert result.decided_at_s is not None
    publish_ms = scenario.publish_started_ms
    decided_s = result.decided_at_s
    verdict_ms = publish_ms + round(decided_s * 1000)
    if outcome == "false_alarm":
        exits = [e for m in result.trace.machines for e in m.events
                 if e.type == "exit" and not e.requested_stop and publish_ms <= e.timestamp <= verdict_ms]
        if exits:
            return "clean-exit", (
                f"the release exited with code 0 (not a crash: the ground truth "
                f"{scenario.truth!r} counts it good) before the verdict at {decided_s:g} s, "
                "and the check failed it"
            )
        return "no-crash", f"the release never crashed, yet the check failed it at {decided_s:g} s"
    crashes = _crash_times_ms(result, publish_ms)
    first_s = (crashes[0] - publish_ms) / 1000 if crashes else None
    if first_s is None and scenario.truth == "serves":
        return "not-serving", (
            "the release never crashed but did not serve: a machine exited on its own or was "
            f"not started within {scenario.truth_window_s:g} s of the publish (the ground truth "
            f"'serves'), and the check passed it at {decided_s:g} s"
        )
    if first_s is None or crashes[0] > verdict_ms:
        when = "after the horizon" if first_s is None else f"{first_s:g} s after the publish"
        return "slow-crash", (
            f"the release first crashed {when}, after the verdict at {decided_s:g} s: "
            "slower than the check's looks"
        )
    # Fly's own sign that it gave up: the newest exit by then is a crash with restarting=false.
    stopped = [m.id for m in result.trace.machines if _gave_up(m.events, verdict_ms)]
    if stopped:
        return "gave-up", (
            f"the platform had given up restarting {', '.join(stopped)} when the check passed "
            f"the release at {decided_s:g} s"
        )
    seen = [e for r in result.looks for m in r.look.machines for e in m.events]
    if not any(e.is_crash and e.timestamp >= publish_ms for e in seen):
        return "hidden", (
            f"the release crashed before the verdict at {decided_s:g} s, but no look showed a "
            f"crash: the event list (cap {scenario.platform.event_log_cap}) had lost them"
        )
    return "in-view", (
        f"the looks showed crashes and the check still passed the release at {decided_s:g} s"
    )


class _Judge:
    """Runs worlds for the search, remembering each world's kind (hypothesis retries many).

    With a ``step`` (a real process that judges the testbed's publish: ``compare
    --check-http``), the process gives each world's row; a wrong one's trace comes from the
    simulator's run of the same world with ``make_check``'s check, which is the process's
    world up to its verdict (a check only reads), and the process's row keeps its own looks,
    verdict and time.
    """

    def __init__(self, base: Scenario, make_check: CheckFactory, budget: CheckBudget,
                 step: RunStep | None = None) -> None:
        self.base = base
        self.make_check = make_check
        self.budget = budget
        self.step = step
        self.kinds: dict[World, tuple[str, str, str, RunResult] | None] = {}
        self.tried = 0

    def kind(self, world: World) -> tuple[str, str, str, RunResult] | None:
        """(outcome, diagnosis, why, traced run) when the world fools the check, else None."""
        if world in self.kinds:
            return self.kinds[world]
        self.tried += 1
        scenario = apply(self.base, world)
        check = self.make_check(scenario.check.model_dump())
        if self.step is not None:
            result = self.step(scenario, scenario.seed, ground_truth(scenario, scenario.seed))
        else:
            result = run(scenario, scenario.seed, check, budget=self.budget)
        answer = None
        if result.outcome in WRONG:
            # A second run with a trace, only for the wrong ones: the diagnosis needs every event.
            traced = run(scenario, scenario.seed, check, bad=result.bad, trace=True,
                         budget=self.budget)
            if self.step is not None:
                traced = dataclasses.replace(result, trace=traced.trace)
            code, why = diagnose(scenario, traced)
            answer = (traced.outcome, code, why, traced)
        self.kinds[world] = answer
        return answer


def _settings(budget: int) -> settings:
    # Every field that shapes the search is set here, so a test profile cannot change it.
    return settings(
        max_examples=budget,
        database=None,
        deadline=None,
        derandomize=False,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        print_blob=False,
    )


@contextlib.contextmanager
def _storage_elsewhere() -> Iterator[None]:
    """Hypothesis' files go to a folder of ours, removed after, not to ``./.hypothesis``.

    ``database=None`` keeps no examples, but hypothesis still caches the constants it reads
    from local source under its home folder, which defaults to the current directory's
    ``.hypothesis/``: a hunt must not leave that in the user's folder. The home folder is
    put back after, so a test suite's own hypothesis use keeps its database.
    """
    previous = storage_directory(intent_to_write=False).home_directory
    with tempfile.TemporaryDirectory(prefix="testbed-hunt-") as folder:
        set_hypothesis_home_dir(folder)
        try:
            yield
        finally:
            set_hypothesis_home_dir(previous)


def _find_new(
    strategy: SearchStrategy[World],
    judge: _Judge,
    kinds: set[tuple[str, str]],
    *,
    budget: int,
    rng: random.Random,
    round_number: int,
    found: int,
    progress: Progress | None,
) -> World | None:
    """One round: the smallest world of a kind not in ``kinds``, or None within the budget."""
    start = judge.tried
    hits = 0

    def new_kind(world: World) -> bool:
        nonlocal hits
        reraise_pending()  # a Ctrl-C hypothesis' gc callback swallowed ends the hunt here
        answer = judge.kind(world)
        wanted = answer is not None and (answer[0], answer[1]) not in kinds
        hits += wanted
        if progress is not None:
            progress(round_number, judge.tried - start, found, hits > 0)
        return wanted

    # A signal's exception may reach us wrapped (hypothesis reports one raised while it
    # draws as FlakyStrategyDefinition) or not at all (raised in its gc callback): whatever
    # find does, a signal that came ends the hunt as the signal, not as hypothesis' error.
    try:
        return find(strategy, new_kind, settings=_settings(budget), random=rng)
    except NoSuchExample:
        return None
    finally:
        reraise_pending()


def hunt(
    base: Scenario,
    check_name: str,
    make_check: CheckFactory,
    *,
    budget: int,
    seed: int,
    progress: Progress | None = None,
    check_budget: CheckBudget = DEFAULT_CHECK_BUDGET,
    step: RunStep | None = None,
) -> HuntResult:
    """Find each kind of world that fools the check, each shrunk to its smallest.

    ``budget`` is worlds tried per round; ``check_budget`` what the check is driven under
    (``sim.checkload.budget``). With ``step`` the process is hunted (``_Judge``).
    """
    judge = _Judge(base, make_check, check_budget, step)
    rng = random.Random(seed)
    found: list[Found] = []
    kinds: set[tuple[str, str]] = set()
    rounds = 0
    with _storage_elsewhere():
        # First the worlds that keep the base's behaviour, then every behaviour: a kind found
        # with the base's app is the one closest to the base, so it is the one kept.
        for strategy in (worlds(base, any_behavior=False), worlds(base)):
            while len(found) < MAX_KINDS:
                rounds += 1
                world = _find_new(
                    strategy, judge, kinds, budget=budget, rng=rng, round_number=rounds,
                    found=len(found), progress=progress,
                )
                if world is None:
                    break
                answer = judge.kind(world)
                assert answer is not None
                outcome, code, why, result = answer
                kinds.add((outcome, code))
                verdict = result.verdict
                found.append(Found(
                    world=world,
                    scenario=apply(base, world),
                    outcome=outcome,
                    diagnosis=code,
                    why=why,
                    reason=verdict.reason if verdict is not None else (result.error or ""),
                    decided_at_s=result.decided_at_s,
                ))
    return HuntResult(check_name, base, seed, budget, tuple(found), judge.tried, rounds)
