"""The front door in Python: load a scenario, run a check, compare checks over seeds, sweep,
roll a deploy out behind a load balancer, hunt for the worlds that fool a check.

Each function takes what the command line takes (a shipped name or a path, check specs,
``--set`` and ``--check-opt`` values) or the loaded value itself, and returns frozen
typed values; the ones people tabulate have ``to_pandas()`` (the ``pandas`` extra).
Walkthrough with executed examples: ``docs/python-api.md``. Bad input raises
``BadInput``: a bad argument (a seed, the seeds, a check, the sets) is one line naming the
parameter, judged before any scenario loads; trouble inside a spec, an override or a file
is the one line the command line prints. One spec or override may stand for a list of one.
``check_budget`` (a ``CheckBudget``: wall-clock seconds a user's check may take per look,
looks any check may take) is what ``--check-timeout``/``--max-looks`` set; without one,
``TESTBED_CHECK_TIMEOUT_S``/``TESTBED_MAX_LOOKS`` if set, else the documented defaults:
the registry's one precedence rule (``sim.config.options``, docs/options.md), which also
states every limit the parameters are held to. The API never imports the command line.

The test kit for a check of your own is re-exported too: ``App``, ``world`` and
``drive_world`` (``sim.kit.testing``), ``worlds`` and ``assert_guarantee`` (``sim.kit.strategies``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from platform_testbed.checks import Check, Look, Verdict, Wait
from platform_testbed.checks.drive import check_name
from platform_testbed.sim.checkload.budget import CheckBudget, environment_budget
from platform_testbed.sim.checkload.loader import CheckSetup, build_checks, setups
from platform_testbed.sim.config import doors
from platform_testbed.sim.config import options as registry
from platform_testbed.sim.config.options import HUNT_SCENARIO, option
from platform_testbed.sim.config.scenario import Scenario, load
from platform_testbed.sim.config.settings import (
    MAX_SEED,
    BadInput,
    seconds_rule,
    seed_value,
    validated,
    whole_rule,
)
from platform_testbed.sim.hunt.search import CheckFactory, Found, HuntResult, Progress, SpecChecks
from platform_testbed.sim.hunt.search import hunt as _hunt
from platform_testbed.sim.kit import testing as _kit
from platform_testbed.sim.kit.strategies import GuaranteeBroken, assert_guarantee, worlds
from platform_testbed.sim.kit.testing import App, Run, World
from platform_testbed.sim.publish.compare import RESULT_DTYPES, Comparison, OutcomeCounts, SeedRun
from platform_testbed.sim.publish.compare import compare as _compare
from platform_testbed.sim.publish.world import RunResult
from platform_testbed.sim.publish.world import run as _run
from platform_testbed.sim.rollout.config import RolloutScenario
from platform_testbed.sim.rollout.config import load as _load_rollout
from platform_testbed.sim.rollout.result import RolloutResult
from platform_testbed.sim.rollout.runs import RolloutRuns, run_rollout
from platform_testbed.sim.runtime import installs
from platform_testbed.sim.runtime.frames import frame
from platform_testbed.sim.sweep.file import Sweep, SweepFile, from_spec, load_sweep
from platform_testbed.sim.sweep.output import SweepSummary, summarise
from platform_testbed.sim.sweep.run import run_sweep
from platform_testbed.sim.sweep.units import Row, columns

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MAX_SEED", "App", "BadInput", "Check", "CheckBudget", "Comparison", "Found", "GuaranteeBroken",
    "HuntResult", "Look",
    "OutcomeCounts", "RolloutResult", "RolloutRuns", "RolloutScenario", "RunResult", "Scenario",
    "SeedRun", "Sweep", "SweepRows", "SweepSummary", "Verdict", "Wait", "assert_guarantee",
    "build", "compare", "drive_world", "hunt", "load_rollout", "load_scenario", "rollout", "run",
    "sweep", "world", "worlds",
]

#: A scenario as the functions take it: loaded, or a shipped name, or a ``.toml`` path.
ScenarioLike = Scenario | str | os.PathLike[str]
#: A check as the functions take it: built, or a spec (``timestamp``,
#: ``package.module:name``, ``path/to/file.py:name``) as ``--check`` takes it.
CheckLike = Check | str


#: The longest world the kit lays out (a scenario's ``horizon_s`` rule).
_KIT_HORIZON_S = 1e6


def world(*apps: App, horizon_s: float = 600.0, seed: int = 0) -> World:
    """``sim.kit.testing.world`` at the door: each argument judged first (BadInput naming it)."""
    if not apps:
        raise BadInput("apps: give at least one App, e.g. world(App())")
    for i, app in enumerate(apps):
        if not isinstance(app, App):
            raise BadInput(f"apps[{i}]: must be an App, e.g. App(crash_after_ms=2500) "
                           f"(got {type(app).__name__})")
    horizon = seconds_rule("horizon_s", horizon_s, _KIT_HORIZON_S)
    return _kit.world(*apps, horizon_s=horizon, seed=seed_value("seed", seed))


def drive_world(check: Check, w: World, max_looks: int = 2_000) -> Run:
    """``sim.kit.testing.drive_world`` at the door: each argument judged first (BadInput naming it)."""
    if not _is_check(check):
        raise BadInput(f"check: must be {_CHECK_OBJECT} (got {type(check).__name__})")
    if not isinstance(w, World):
        raise BadInput(f"w: must be a World, from world(App(), ...) (got {type(w).__name__})")
    return _kit.drive_world(check, w, max_looks=whole_rule("max_looks", max_looks))


def load_scenario(name_or_path: str | os.PathLike[str], sets: Sequence[str] | str = ()) -> Scenario:
    """A shipped scenario by name, or a TOML file by path, with ``--set KEY=VALUE`` overrides.

    One override may be given as a bare string (``"seed=7"``), as a list of one.
    """
    doors.check_environment()
    doors.path_like("name_or_path", name_or_path, _SCENARIO_RULE)
    return load(os.fspath(name_or_path), _sets(sets))


def _sets(sets: Sequence[str] | str) -> list[str]:
    """``sets`` as a list of ``KEY=VALUE`` strings: a bare string is one, never its characters."""
    if isinstance(sets, str):
        return [sets]
    if not isinstance(sets, Iterable):
        raise BadInput(f"sets: give KEY=VALUE strings, e.g. ['seed=7'] (got {sets!r})")
    chosen = doors.listed("sets", sets)
    for item in chosen:
        if not isinstance(item, str):
            raise BadInput(f"sets: each must be a KEY=VALUE string, e.g. 'seed=7' (got {item!r})")
    return chosen


def _is_check(check: object) -> bool:
    """A check object: its ``next`` is callable (a class with a ``next`` method is not one)."""
    return callable(getattr(check, "next", None)) and not isinstance(check, type)


_CHECK_OBJECT = "a check object with a next() method"
_CHECK_RULE = f"a spec such as 'count' or {_CHECK_OBJECT}"


def _checks(checks: Sequence[CheckLike] | CheckLike) -> list[CheckLike]:
    """``checks`` as a list: one spec or one object is a list of one, never a spec's characters."""
    if isinstance(checks, str) or _is_check(checks):
        return [cast(CheckLike, checks)]
    if not isinstance(checks, Iterable):
        raise BadInput(f"checks: give a list of checks, each {_CHECK_RULE} (got {checks!r})")
    chosen = doors.listed("checks", checks)
    for check in chosen:
        if not (isinstance(check, str) or _is_check(check)):
            raise BadInput(f"checks: each must be {_CHECK_RULE} (got {check!r})")
    return chosen


_SCENARIO_RULE = "a shipped scenario's name or a path to a .toml file"


def _scenario(scenario: ScenarioLike) -> Scenario:
    return scenario if isinstance(scenario, Scenario) else load_scenario(scenario)


def build(
    scenario: ScenarioLike,
    checks: Sequence[CheckLike] | CheckLike = (),
    options: Mapping[str, Any] | None = None,
) -> list[Check]:
    """The checks as they run in ``scenario``: specs built with its ``[check]`` table.

    No checks means every built-in. ``options`` are ``--check-opt`` values
    (``{"look_delay_s": 5}``, or ``{"count.look_delay_s": 5}`` for one check); a check
    given as an object runs as it is. One check may be given alone, as a list of one.
    """
    doors.check_environment()
    doors.settings_like("scenario", scenario, Scenario, _SCENARIO_RULE)
    options = doors.options(options)
    chosen = _checks(checks)
    return _built(_scenario(scenario), chosen, options)[0]


def _built(
    scenario: Scenario, checks: Sequence[CheckLike], options: Mapping[str, Any] | None
) -> tuple[list[Check], tuple[CheckSetup, ...]]:
    specs = [c for c in checks if isinstance(c, str)]
    # No checks at all means every built-in, as on the command line; objects run as given.
    built = build_checks(specs, scenario.check, options, door="checks") if specs or not checks else []
    if not checks:
        return [item.check for item in built], setups(built)
    made = iter(built)
    return [next(made).check if isinstance(c, str) else c for c in checks], setups(built)


def run(
    scenario: ScenarioLike,
    check: CheckLike,
    seed: int | None = None,
    *,
    options: Mapping[str, Any] | None = None,
    trace: bool = False,
    check_budget: CheckBudget | None = None,
) -> RunResult:
    """One check in one world (default: the scenario's own seed), judged against the truth.

    ``trace=True`` keeps every state change and event, for ``sim.show.plot`` timelines.
    """
    doors.check_environment()
    doors.settings_like("scenario", scenario, Scenario, _SCENARIO_RULE)
    options, trace = doors.options(options), doors.flag("trace", trace)
    if not (isinstance(check, str) or _is_check(check)):
        raise BadInput(f"check: must be {_CHECK_RULE} (got {check!r})")
    chosen = None if seed is None else seed_value("seed", seed)
    loaded = _scenario(scenario)
    [built] = _built(loaded, [check], options)[0]
    budget = _budget(check_budget)
    return _run(loaded, loaded.seed if chosen is None else chosen, built, trace=trace,
                budget=budget)


def compare(
    scenario: ScenarioLike,
    checks: Sequence[CheckLike] | CheckLike = (),
    seeds: Iterable[int] | None = None,
    *,
    options: Mapping[str, Any] | None = None,
    check_budget: CheckBudget | None = None,
) -> Comparison:
    """Every check in every seed's world (default: the scenario's own seed), side by side.

    No checks means every built-in. The result holds every run (``seeds``), the outcome
    counts per check (``summary``) and the scenario's ``[expect]`` judged on each seed.
    One check may be given alone (``"count"``), as a list of one. ``seeds`` is a list or
    range of at least one seed, at most ``testbed compare``'s run limit.
    """
    doors.check_environment()
    doors.settings_like("scenario", scenario, Scenario, _SCENARIO_RULE)
    options = doors.options(options)
    chosen_checks = _checks(checks)
    budget = _budget(check_budget)
    chosen = doors.seeds_bounded("seeds", seeds, registry.limit("max_runs"),
                                 option("max_runs").env_name)
    loaded = _scenario(scenario)
    built, made = _built(loaded, chosen_checks, options)
    return _compare(loaded, built, (loaded.seed,) if chosen is None else chosen, setups=made,
                    budget=budget)


@dataclass(frozen=True, slots=True)
class SweepRows:
    """A finished sweep: its rows (one per check per world, unit order) and its summary."""

    sweep: Sweep
    rows: tuple[Row, ...]
    summary: SweepSummary

    def to_pandas(self) -> pd.DataFrame:
        """The rows as a DataFrame: ``point``, ``seed``, the axes, then the result columns."""
        return frame(self.rows, RESULT_DTYPES, columns(self.sweep))


def sweep(
    spec: str | os.PathLike[str] | Mapping[str, Any] | Sweep,
    *,
    every: int = 1,
    workers: int = 1,
    check_budget: CheckBudget | None = None,
) -> SweepRows:
    """Run a sweep: a shipped sweep's name, a sweep file's path, or its tables as a mapping.

    A mapping is read as a sweep file is (``scenario``, ``checks``, ``seeds``, ``axes``;
    a relative scenario path is taken from the current folder). ``every=N`` keeps every
    N-th value of each axis (``testbed sweep``'s quick look). ``workers=N`` runs N local
    processes, started as ``multiprocessing`` does (a script guards the call with
    ``if __name__ == "__main__":``); the default runs here. Rows come in unit order either way.
    """
    doors.check_environment()
    if not isinstance(spec, (Sweep, Mapping)):
        doors.path_like("spec", spec, "a shipped sweep's name, a sweep file's path, a mapping "
                        "of its tables or a Sweep")
    every = _whole("every", every, "1 or more")
    workers = _whole("workers", workers, "1 or more")
    registry.resolve("workers", workers, where="workers")  # the limit --workers has
    budget = _budget(check_budget)
    if isinstance(spec, Sweep):
        chosen = spec
    elif isinstance(spec, Mapping):
        chosen = from_spec(validated(SweepFile, dict(spec), "sweep"), Path.cwd(),
                           str(spec.get("name") or "sweep"))
    else:
        chosen = load_sweep(os.fspath(spec))
    if every > 1:
        chosen = chosen.thinned(every)
    result = run_sweep(chosen, workers=workers, budget=budget)
    if result.interrupted:
        raise KeyboardInterrupt  # run_sweep keeps a Ctrl-C'd sweep's rows; a library call stops
    return SweepRows(chosen, tuple(result.rows), result.summary or summarise(result))


def load_rollout(
    name_or_path: str | os.PathLike[str], sets: Sequence[str] | str = ()
) -> RolloutScenario:
    """A shipped rollout scenario (``scenarios/rollouts/``) by name, or a TOML file by path.

    ``sets`` are ``--set KEY=VALUE`` overrides; one may be given as a bare string.
    """
    doors.check_environment()
    doors.path_like("name_or_path", name_or_path, "a shipped rollout's name or a path to a .toml file")
    return _load_rollout(os.fspath(name_or_path), _sets(sets))


def rollout(
    scenario: RolloutScenario | str | os.PathLike[str], seeds: Iterable[int] | None = None
) -> RolloutRuns:
    """A rolling deploy behind a load balancer, once per seed (default: the scenario's own).

    The runs of ``testbed rollout`` (``--seed S --runs N`` is ``seeds=range(S, S + N)``),
    its timing invariants, and the scenario's ``[expect]`` judged on the runs; a missed
    expectation is in ``expectations_failed``, not raised.
    """
    doors.check_environment()
    doors.settings_like("scenario", scenario, RolloutScenario,
                        "a shipped rollout's name or a path to a .toml file")
    chosen = doors.seeds_bounded("seeds", seeds, registry.limit("max_rollout_runs"))  # before any loading
    loaded = scenario if isinstance(scenario, RolloutScenario) else load_rollout(scenario)
    return run_rollout(loaded, (loaded.seed,) if chosen is None else chosen)


def _budget(value: object) -> CheckBudget:
    """``check_budget`` as given: a ``CheckBudget`` (its own values checked when it was made),
    or for None the environment's, else the defaults."""
    if value is None:
        return environment_budget()
    if not isinstance(value, CheckBudget):
        raise BadInput(f"check_budget: must be a CheckBudget(timeout_s=..., max_looks=...) "
                       f"(got {value!r})")
    return value


def _whole(field: str, value: object, rule: str, most: int | None = None) -> int:
    """A count given in Python: a whole number (numpy's too, not a bool) from 1 (to ``most``)."""
    if (isinstance(value, bool) or not isinstance(value, Integral) or int(value) < 1
            or (most is not None and int(value) > most)):
        raise BadInput(f"{field}: must be a whole number, {rule} (got {value!r})")
    return int(value)


def _factory(check: CheckLike | CheckFactory) -> CheckFactory:
    """What builds the check for one world, from that world's ``[check]`` options."""
    if isinstance(check, str):
        return SpecChecks(check)
    if _is_check(check):
        same = cast(Check, check)
        return lambda options: same  # an object runs as it is in every world
    if callable(check):
        return check
    raise BadInput(f"check: a spec, a check (with next()) or a factory of checks (got {check!r})")


def hunt(
    check: CheckLike | CheckFactory,
    scenario: ScenarioLike = HUNT_SCENARIO,
    *,
    budget: int = int(option("budget").default or 0),
    seed: int = 0,
    progress: Progress | None = None,
    check_budget: CheckBudget | None = None,
) -> HuntResult:
    """The worlds around ``scenario`` that fool ``check``, each kind shrunk to its smallest.

    ``testbed hunt`` without the files: each ``Found`` holds its world's overrides
    (``world``), the whole ``scenario`` (``compare`` reproduces it), the wrong ``outcome``
    and its ``diagnosis``. A spec is built per world with that world's ``[check]`` options
    (the hunt varies ``look_delay_s`` and ``poll_s``); an object runs as it is; a callable
    ``factory(options) -> check`` builds one per world. ``budget`` is worlds tried per
    round; the same ``seed`` finds the same worlds. ``progress(round, tried, found,
    shrinking)`` is told after every world tried (``testbed hunt`` draws its bar with it).
    """
    doors.check_environment()
    most = int(option("budget").most or 0)
    budget = _whole("budget", budget, f"from 1 to {most:,}", most)
    seed = seed_value("seed", seed)
    doors.progress(progress)
    doors.settings_like("scenario", scenario, Scenario, _SCENARIO_RULE)
    limits = _budget(check_budget)
    base = _scenario(scenario)
    make = doors.guarded_factory(_factory(check), _is_check)
    name = check_name(make(base.check.model_dump()))  # built once here: a bad spec stops here
    return _hunt(base, name, make, budget=budget, seed=seed, progress=progress,
                 check_budget=limits)


# --- figures from the front door (matplotlib, the `plot` extra, imported only when drawn) ---

__all__ += ["heatmap", "timeline"]

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_NEEDS_PLOT = f"needs matplotlib: {installs.PLOT}"


def timeline(
    scenario: ScenarioLike,
    checks: Sequence[CheckLike] | CheckLike = (),
    seed: int | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> Figure:
    """Each check's traced run of one world on one time axis: the figure ``--timeline`` draws.

    No checks means every built-in; ``seed`` defaults to the scenario's. With ``path`` the
    figure is also written there (format from the suffix, judged before any run).
    """
    from platform_testbed.checks.registry import BUILTIN_CHECKS  # noqa: PLC0415 -- kept with its use
    from platform_testbed.sim.runtime.outputs import check_image  # noqa: PLC0415

    target = None if path is None else _figure_path(path, check_image)
    try:
        from platform_testbed.sim.show.plot import compare_timelines, save_timeline  # noqa: PLC0415
    except ModuleNotFoundError:
        raise BadInput(f"timeline: {_NEEDS_PLOT}") from None
    loaded = _scenario(scenario)
    chosen = _checks(checks) or list(BUILTIN_CHECKS)
    results = [run(loaded, check, seed, options=options, trace=True) for check in chosen]
    if target is not None:
        save_timeline(target, loaded, results)
    return compare_timelines(loaded, results)


def _figure_path(path: object, check_image: Any) -> Path:
    """``path`` as a figure's file, judged before any run: BadInput (one line) if it is not one."""
    if not isinstance(path, str | os.PathLike):
        raise BadInput(f"path: a file path for the figure (got {type(path).__name__})")
    try:
        return cast(Path, check_image("path", Path(os.fspath(path))))
    except (ValueError, UnicodeError) as error:  # a NUL byte, a lone surrogate
        raise BadInput(f"path: not a usable file name ({error})") from None


def heatmap(result: SweepRows, x: str | None = None, y: str | None = None,
            title: str | None = None) -> Figure:
    """The miss-rate heatmap of a finished ``sweep``: its ``[heatmap]`` x and y (else its first
    two axes), one panel per check, other axes pooled; titled with the sweep's name."""
    if not isinstance(result, SweepRows):
        raise BadInput(f"result: a finished api.sweep(...) (got {type(result).__name__})")
    for name, value in (("x", x), ("y", y), ("title", title)):
        if value is not None and not isinstance(value, str):
            raise BadInput(f"{name}: a string (got {type(value).__name__})")
    try:
        from platform_testbed.sim.sweep.heatmap import heatmap as _heatmap  # noqa: PLC0415
    except ModuleNotFoundError:
        raise BadInput(f"heatmap: {_NEEDS_PLOT}") from None
    keys = result.sweep.heatmap or result.sweep.keys
    if len(keys) < 2 and (x is None or y is None):
        raise BadInput("heatmap: the sweep has one axis; a heatmap needs two")
    x, y = x or keys[0], y or keys[1]
    for name, key in (("x", x), ("y", y)):
        if key not in result.sweep.keys:
            raise BadInput(f"heatmap: {name} {key!r} is not one of the axes "
                           f"({', '.join(result.sweep.keys)})")
    names = list(dict.fromkeys(str(r["check"]) for r in result.rows))
    return _heatmap(result.rows, x, y, names,
                    title=title or f"{result.sweep.name}: where {', '.join(names)} miss, {x} × {y}")
