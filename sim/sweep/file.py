"""Sweep files: the TOML a person writes, its axes, and the validated Sweep it expands to.

A sweep file names a base scenario, the checks to compare, the seeds, and axes over
scenario keys (``table.key`` as in ``--set``). Points are numbered with the last axis
varying fastest.
"""

from __future__ import annotations

import functools
import math
import os
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
)

from platform_testbed.checks import BUILTIN_CHECKS
from platform_testbed.sim.checkload.loader import load_checks
from platform_testbed.sim.config import scenario as scenarios
from platform_testbed.sim.config.numbers import Seed, Table
from platform_testbed.sim.config.options import limit, option
from platform_testbed.sim.config.scenario import Scenario, validate
from platform_testbed.sim.config.settings import (
    MAX_SEED,
    SEED_RULE,
    BadInput,
    apply_sets,
    copy_tables,
    locate,
    read_toml,
    seed_range,
    set_key,
    validated,
)
from platform_testbed.sim.publish.compare import RESULT_COLUMNS

Scalar = int | float | str | bool


class _Table(Table, BaseModel):  # Table: no true for a number, no "yes" for true
    # inf or NaN in an axis would make a range endless or a point meaningless.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


#: The most worlds one sweep runs (points x seeds), and so the most values one axis holds:
#: the shipped sweeps run 10,000 and 12,500; a million takes hours on a laptop. Raise it with
#: TESTBED_MAX_SWEEP_POINTS.
MAX_SWEEP_POINTS = limit("max_sweep_points", {})  # the registry's (sim.config.options)
POINTS_ENV = str(option("max_sweep_points").env_name)


def max_points() -> int:
    """The limit on worlds per sweep, from the environment if it says."""
    return limit("max_sweep_points")


class RangeAxis(_Table):
    """Values from ``start`` to ``stop`` (inclusive) every ``step``."""

    start: float
    stop: float
    step: float = Field(gt=0)

    def size(self) -> int:
        """How many values the range holds (0 if stop is below start)."""
        return max(0, math.floor((self.stop - self.start) / self.step + 1e-9) + 1)

    def values(self) -> list[Scalar]:
        """The values, as integers when start and step are whole numbers."""
        count = self.size()
        if count < 1:
            raise ValueError(f"empty range: stop {self.stop:g} is below start {self.start:g}")
        # Counted before a single value is made: 1e12 points would end in MemoryError.
        limit = max_points()
        if count > limit:
            raise ValueError(f"{count:,} values, more than the {limit:,} a sweep may run "
                             f"(a wider step, or set {POINTS_ENV} to raise the limit)")
        whole = self.start.is_integer() and self.step.is_integer()
        out: list[Scalar] = []
        for i in range(count):
            value = round(self.start + i * self.step, 10)
            out.append(int(value) if whole else value)
        return out


class RandomAxis(_Table):
    """``count`` values drawn from ``random.Random(seed)``: uniform, integers or loguniform."""

    random: Literal["uniform", "integers", "loguniform"]
    low: float
    high: float
    count: int = Field(ge=1)
    seed: int = 0

    def values(self) -> list[Scalar]:
        """The drawn values, in draw order."""
        if self.high < self.low:
            raise ValueError(f"high {self.high:g} is below low {self.low:g}")
        limit = max_points()
        if self.count > limit:
            raise ValueError(f"count {self.count:,} is more than the {limit:,} values a sweep "
                             f"may run (set {POINTS_ENV} to raise the limit)")
        rng = random.Random(self.seed)
        if self.random == "integers":
            low, high = math.ceil(self.low), math.floor(self.high)
            return [rng.randint(low, high) for _ in range(self.count)]
        if self.random == "loguniform":
            if self.low <= 0:
                raise ValueError("loguniform needs low > 0")
            lo, hi = math.log(self.low), math.log(self.high)
            return [round(math.exp(rng.uniform(lo, hi)), 6) for _ in range(self.count)]
        return [round(rng.uniform(self.low, self.high), 6) for _ in range(self.count)]


def _axis_kind(value: Any) -> str:
    """Which kind of axis a table is, so its errors are that kind's, not a list's."""
    if isinstance(value, dict):
        return "RandomAxis" if "random" in value else "RangeAxis"
    return "ValueList"


Axis = Annotated[
    Annotated[list[Scalar], Tag("ValueList")] | Annotated[RangeAxis, Tag("RangeAxis")]
    | Annotated[RandomAxis, Tag("RandomAxis")],
    Discriminator(_axis_kind),
]
#: Columns every sweep row has before its axes: an axis of the same name would write a
#: second column of that name (``point,seed,seed``) whose values no world ran with.
RESERVED_AXES = frozenset({"point", "seed", *RESULT_COLUMNS})


class HeatmapTable(_Table):
    """``[heatmap]``: which axes the miss-region heatmap puts on x and y (and on facets).

    With ``columns`` and ``rows`` too, each check gets a grid of small maps, one per
    (column, row) value pair: a map of the space over four axes, the rest pooled.
    """

    x: str
    y: str
    columns: str | None = None
    rows: str | None = None


class SweepFile(_Table):
    """A sweep file as written: base scenario, fixed overrides, checks, seeds, axes."""

    name: str = ""
    description: str = ""
    scenario: str
    set: list[str] = []
    checks: list[str] = []
    seeds: int | list[int] = Field(1)
    first_seed: Seed | None = None  # the seed rule of every door (sim.config.numbers)
    axes: dict[str, Axis] = {}
    heatmap: HeatmapTable | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        # The name becomes the default output file: it must stay in the output folder.
        if value and (value != Path(value).name or value in (".", "..") or value.startswith(".")):
            raise ValueError("must be one file name (no folder, no leading dot): output "
                             "goes to NAME.csv in the current folder; use --out for elsewhere")
        if not value.isprintable():  # a newline or ESC in a file name: refused, not written
            raise ValueError("must be printable: no control characters, line breaks or lone "
                             "surrogates (it becomes a file name)")
        return value

    @field_validator("axes")
    @classmethod
    def _axes(cls, value: dict[str, Any]) -> dict[str, Any]:
        taken = sorted(RESERVED_AXES & set(value))
        if taken:
            raise ValueError(f"{taken[0]!r} is a column of every row, not an axis (reserved: "
                             "point, seed and the result columns); vary seeds with 'seeds'")
        return value

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, value: int | list[int]) -> int | list[int]:
        if isinstance(value, int) and not 1 <= value <= 1_000_000:
            raise ValueError("a seed count must be between 1 and 1000000")
        if isinstance(value, list) and (not value or not all(0 <= v <= MAX_SEED for v in value)):
            raise ValueError(f"a seed list must be non-empty, each seed {SEED_RULE}")
        return value


@dataclass(frozen=True)
class Sweep:
    """A validated sweep, ready to run anywhere: it carries the base scenario as data."""

    name: str
    scenario_name: str
    base: dict[str, Any]
    checks: tuple[str, ...]
    seeds: tuple[int, ...]
    axes: tuple[tuple[str, tuple[Scalar, ...]], ...]
    #: (x, y) or (x, y, columns, rows): the axes the heatmap draws.
    heatmap: tuple[str, ...] | None = None
    #: ``--check-opt`` values, over each world's ``[check]`` table (sim.checkload.loader).
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """The swept scenario keys, in file order."""
        return tuple(key for key, _ in self.axes)

    @property
    def points(self) -> int:
        """How many parameter combinations the axes span."""
        return math.prod(len(values) for _, values in self.axes)

    @property
    def units(self) -> int:
        """How many worlds: points times seeds."""
        return self.points * len(self.seeds)

    def point(self, index: int) -> tuple[Scalar, ...]:
        """The axis values of point ``index`` (the last axis varies fastest)."""
        values = []
        for _, axis in reversed(self.axes):
            index, at = divmod(index, len(axis))
            values.append(axis[at])
        return tuple(reversed(values))

    def scenario(self, values: Sequence[Scalar], env: Env | None = None) -> Scenario:
        """The base scenario with one point's values set.

        The same value as validating the whole merged mapping (``validate``), from less
        work: only the tables the axes touch are validated, each table's mapping once per
        process (``_point_tables``), and set on the base scenario, validated once.
        ``env``: ``validation_env()``, read once for many points (it costs more than a point).
        """
        env = validation_env() if env is None else env
        tables = _kept_tables(self, values, env)
        if tables is None:
            raw = _with_values(self.base, zip(self.keys, values, strict=True))
            tables = _point_tables(raw, self.keys, env)
            if tables is None:  # not a table the fast path knows, or a bad value: the whole rule
                return validate(raw, self.name)
            _keep_tables(self, values, env, tables)
        return self._base_scenario.model_copy(update=tables)

    @functools.cached_property
    def _base_scenario(self) -> Scenario:
        return validate(self.base, self.name)

    def thinned(self, every: int) -> Sweep:
        """Every ``every``-th value of each axis: a quick look at a big sweep."""
        axes = tuple((key, values[::every]) for key, values in self.axes)
        return Sweep(self.name, self.scenario_name, self.base, self.checks, self.seeds, axes,
                     self.heatmap, self.options)


#: The TESTBED_ variables, as ``validation_env`` reads them.
Env = tuple[tuple[str, str], ...]
#: Validated tables by (table, its mapping's repr, the TESTBED_ variables): a point's
#: validation is a pure function of those (a field's rule may read TESTBED_MIN_PERIOD_S).
#: A grid's tables repeat (the release table of a point changes only along its axis),
#: so most points validate nothing. Bounded: emptied when full.
_TABLES: dict[tuple[str, str, Env], BaseModel] = {}
_TABLES_MAX = 16_384


def validation_env() -> Env:
    """The TESTBED_ variables now: what a table's validation may read besides the table."""
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("TESTBED_")))


def _point_tables(raw: dict[str, Any], keys: Sequence[str], env: Env) -> dict[str, BaseModel] | None:
    """The validated tables of ``raw`` that ``keys`` touch, or None where only the whole
    validation will do: a top-level key, a field that is not a plain table, a bad value
    (the whole validation then words the error exactly as always).

    Equal to validating all of ``raw``: ``Scenario`` has no rule across its tables (each
    field is validated on its own), and the tables are frozen, so one may be shared.
    """
    tables: dict[str, BaseModel] = {}
    for key in keys:
        top, dot, _ = key.partition(".")
        if not dot:
            return None
        if top in tables:
            continue
        field = Scenario.model_fields.get(top)
        model = None if field is None else field.annotation
        table = raw.get(top)
        if not (isinstance(model, type) and issubclass(model, BaseModel)
                and isinstance(table, dict)):
            return None
        cache_key = (top, repr(table), env)
        found = _TABLES.get(cache_key)
        if found is None:
            try:
                found = model.model_validate(table)
            except ValidationError:
                return None
            if len(_TABLES) >= _TABLES_MAX:
                _TABLES.clear()
            _TABLES[cache_key] = found
        tables[top] = found
    return tables


#: A point's validated tables by the axis values that set them: (the sweep's base mapping's
#: id, table, its axes' values with their types, the TESTBED_ variables) -> (that base,
#: the table). Found without merging or printing the point's mapping (``_point_tables``'
#: key): a sweep's points repeat each table's values (the check table of million_worlds
#: takes 1,000 values in a million points). The base is held and compared by identity, so
#: an id reused by another mapping is never taken for it. Bounded: emptied when full.
_BY_VALUES: dict[tuple[int, str, tuple[tuple[type, Scalar], ...], Env],
                 tuple[dict[str, Any], BaseModel]] = {}


@functools.lru_cache(maxsize=64)
def _groups(keys: tuple[str, ...]) -> tuple[tuple[str, tuple[int, ...]], ...] | None:
    """The tables the axes set, each with the indices of its axes; None: a top-level key."""
    tops: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        top, dot, _ = key.partition(".")
        if not dot:
            return None
        tops.setdefault(top, []).append(i)
    return tuple((top, tuple(indices)) for top, indices in tops.items())


def _kept_tables(sweep: Sweep, values: Sequence[Scalar], env: Env) -> dict[str, BaseModel] | None:
    """The point's tables as validated for an earlier point with the same values, or None."""
    groups = _groups(sweep.keys)
    if groups is None:
        return None
    base = sweep.base
    tables: dict[str, BaseModel] = {}
    for top, indices in groups:
        kept = _BY_VALUES.get((id(base), top, tuple((type(values[i]), values[i]) for i in indices),
                               env))
        if kept is None or kept[0] is not base:
            return None
        tables[top] = kept[1]
    return tables


def _keep_tables(sweep: Sweep, values: Sequence[Scalar], env: Env,
                 tables: dict[str, BaseModel]) -> None:
    groups = _groups(sweep.keys)
    if groups is None:
        return
    if len(_BY_VALUES) >= _TABLES_MAX:
        _BY_VALUES.clear()
    for top, indices in groups:
        key = (id(sweep.base), top, tuple((type(values[i]), values[i]) for i in indices), env)
        _BY_VALUES[key] = (sweep.base, tables[top])


def _with_values(raw: dict[str, Any], items: Iterable[tuple[str, Scalar]]) -> dict[str, Any]:
    merged = copy_tables(raw)
    for key, value in items:
        set_key(merged, key, value, f"axes.{key}")
    return merged


def _base_raw(name_or_path: str, sweep_dir: Path, sets: list[str]) -> tuple[str, dict[str, Any]]:
    """The base scenario as a raw mapping (validated), by shipped name or path."""
    try:
        path = locate(name_or_path, scenarios.shipped, "scenario", relative_to=sweep_dir)
    except BadInput as error:
        raise BadInput(f"scenario: {error}") from None
    raw = read_toml(path, "scenario: cannot read {path} ({reason})")
    raw.setdefault("name", path.stem)
    raw = apply_sets(raw, sets)
    validate(raw, path.name)
    return path.stem, raw


def load_sweep(path: str | Path) -> Sweep:
    """Read and validate a sweep file (a path, or a shipped sweep's name); any problem is BadInput."""
    path = locate(str(path), scenarios.shipped_sweeps, "sweep")
    raw = read_toml(path, "{path}: cannot read sweep file ({reason})")
    spec = validated(SweepFile, raw, path.name)
    return from_spec(spec, path.parent, path.stem)


def _refuse_past_limit(spec: SweepFile) -> None:
    """BadInput if the axes' sizes times the seeds pass the world limit, before expanding them."""
    sizes = [len(axis) if isinstance(axis, list) else axis.size() if isinstance(axis, RangeAxis)
             else axis.count for axis in spec.axes.values()]
    seeds = spec.seeds if isinstance(spec.seeds, int) else len(spec.seeds)
    units = math.prod(sizes) * seeds
    limit = max_points()
    if max(sizes, default=0) > limit:
        return  # one axis alone is past it: the axis's own check names it
    if units > limit:
        raise BadInput(f"axes: {units:,} worlds (points x seeds), more than the {limit:,} a "
                       f"sweep may run; thin an axis, or set {POINTS_ENV} to raise the limit")


def from_spec(spec: SweepFile, sweep_dir: Path, default_name: str = "sweep") -> Sweep:
    """Check a parsed sweep against its base scenario and expand its axes."""
    scenario_name, base = _base_raw(spec.scenario, sweep_dir, spec.set)
    axes: list[tuple[str, tuple[Scalar, ...]]] = []
    _refuse_past_limit(spec)  # counted before one value is made: 3 axes of 10**6 are 10**18 worlds
    for key, axis in spec.axes.items():
        if len(key.split(".")) > 2 or not all(key.split(".")):
            raise BadInput(f"axes.{key}: keys are 'field' or 'table.field'")
        try:
            values = axis if isinstance(axis, list) else axis.values()
        except ValueError as error:
            raise BadInput(f"axes.{key}: {error}") from None
        if not values:
            raise BadInput(f"axes.{key}: needs at least one value")
        # Scenario fields are independent, so checking each value alone checks every point.
        for value in dict.fromkeys(values):
            validate(_with_values(base, [(key, value)]), f"axes.{key} = {value!r}")
        axes.append((key, tuple(values)))
    base_scenario = validate(base, scenario_name)
    check_names = spec.checks or list(BUILTIN_CHECKS)
    # An unknown or unloadable check: BadInput now, naming the field it came from.
    load_checks(check_names, base_scenario.check.model_dump(), door="checks:")
    if isinstance(spec.seeds, int):
        first = base_scenario.seed if spec.first_seed is None else spec.first_seed
        seeds = tuple(seed_range("seeds", first, spec.seeds))  # none past MAX_SEED
    else:
        seeds = tuple(spec.seeds)
    heatmap = None
    if spec.heatmap is not None:
        table = spec.heatmap
        if (table.columns is None) != (table.rows is None):
            raise BadInput("heatmap: give both columns and rows, or neither")
        keys = [table.x, table.y]
        if table.columns is not None and table.rows is not None:
            keys += [table.columns, table.rows]
        for key in keys:
            if key not in spec.axes:
                raise BadInput(f"heatmap: {key!r} is not one of the axes")
        roles = ("x", "y", "columns", "rows")
        for i, key in enumerate(keys):
            if key in keys[:i]:  # one axis on two sides of the map draws only its diagonal
                raise BadInput(f"heatmap: {roles[keys.index(key)]} and {roles[i]} are both "
                               f"{key!r}: give each a different axis")
        heatmap = tuple(keys)
    units = math.prod(len(values) for _, values in axes) * len(seeds)
    limit = max_points()
    if units > limit:
        raise BadInput(f"axes: {units:,} worlds (points x seeds), more than the {limit:,} a "
                       f"sweep may run; thin an axis, or set {POINTS_ENV} to raise the limit")
    return Sweep(
        spec.name or default_name, scenario_name, base, tuple(check_names), seeds, tuple(axes),
        heatmap,
    )

