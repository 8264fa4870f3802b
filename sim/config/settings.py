"""Settings files: TOML read by shipped name or path, ``--set`` overrides, one-line errors."""

from __future__ import annotations

import difflib
import math
import os
import stat
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from numbers import Integral
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

# pydantic loads with the first file validated, not with BadInput: the command line's
# parser (and a shell's Tab) imports this module and must stay light.
Model = TypeVar("Model", bound="BaseModel")


class BadInput(Exception):
    """Input a person can fix: reported as one line, exit status 2."""


def parse_value(text: str) -> Any:
    """Read a ``--set`` value as TOML (numbers, booleans, quoted strings), else as a bare string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        return text


def apply_sets(raw: dict[str, Any], sets: Sequence[str]) -> dict[str, Any]:
    """Apply ``table.key=value`` overrides to a raw scenario mapping (returns a new one)."""
    merged = copy_tables(raw)
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"--set {item!r}: expected KEY=VALUE, e.g. platform.event_log_cap=3")
        set_key(merged, key.strip(), parse_value(value.strip()), f"--set {key}")
    return merged


def copy_tables(raw: dict[str, Any]) -> dict[str, Any]:
    """A copy of a raw mapping whose tables are copies too, ready for ``set_key``."""
    return {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}


def set_key(merged: dict[str, Any], key: str, value: Any, where: str) -> None:
    """Set ``value`` at a ``field`` or ``table.field`` key; a bad key is BadInput starting ``where``."""
    *tables, field = key.split(".")
    if len(tables) > 1:
        raise BadInput(f"{where}: keys are 'field' or 'table.field'")
    target = merged
    if tables:
        table = merged.setdefault(tables[0], {})
        if not isinstance(table, dict):
            raise BadInput(f"{where}: {tables[0]} is not a table")
        target = table
    target[field] = value


def _near_miss(model: type[Any] | None, loc: Sequence[Any]) -> str:
    """`` (did you mean X?)`` for an unknown key one edit or so from a field of its table, else ""."""
    fields: Mapping[str, Any] = {}
    for part in loc:
        fields = getattr(model, "model_fields", {})
        if part not in fields:
            break
        model = fields[part].annotation
    near = difflib.get_close_matches(str(loc[-1]), list(fields), n=1) if loc else []
    return f" (did you mean {near[0]}?)" if near else ""


def format_error(source: str, error: ValidationError, model: type[Any] | None = None) -> str:
    """The first validation problem as one line naming the field and the rule.

    With ``model``, an unknown key close to one of its table's fields names that field.
    """
    errors = error.errors()
    # In a union (a sweep axis is a list, a range or a random draw) the first error is the
    # first branch's; a non-finite number is the one a person can act on.
    first = next((e for e in errors if e["type"] == "finite_number"), errors[0])
    # A union's branch shows in the location as its class (``RandomAxis``) or type
    # (``list[...]``): the person wrote neither, so the location leaves them out.
    loc = ".".join(str(p) for p in first["loc"] if not _branch(str(p)))
    kind = first["type"]
    if kind == "extra_forbidden":
        return f"{source}: {loc}: unknown field{_near_miss(model, first['loc'])}"
    if kind == "missing":
        return f"{source}: {loc}: required field is missing"
    got = first.get("input")
    # Only the first letter is lowered: a message may name an environment variable.
    msg = first["msg"].rstrip(".").removeprefix("Value error, ")
    return f"{source}: {loc}: {msg[:1].lower()}{msg[1:]} (got {got!r})"


def _branch(part: str) -> bool:
    return part.startswith("function-") or "[" in part or part[:1].isupper()


def validated(model: type[Model], raw: dict[str, Any], source: str) -> Model:
    """Validate a raw mapping into ``model``, or raise BadInput with one line."""
    from pydantic import ValidationError  # noqa: PLC0415 -- see Model

    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise BadInput(format_error(source, error, model)) from None


def locate(
    name_or_path: str,
    shipped: Callable[[], Mapping[str, Path]],
    kind: str,
    relative_to: Path | None = None,
) -> Path:
    """The file a name means: a path if it looks like one (``.toml`` or a slash), else a shipped one.

    With ``relative_to``, a relative path that does not exist from here is taken from there.
    """
    if name_or_path.endswith(".toml") or "/" in name_or_path or os.sep in name_or_path:
        path = Path(name_or_path)
        if relative_to is not None and not path.is_absolute() and not path.exists():
            path = relative_to / path
        return path
    found = shipped().get(name_or_path)
    if found is None:
        names = ", ".join(shipped()) or "none"
        raise BadInput(f"unknown {kind} {name_or_path!r} (shipped: {names})")
    return found


def read_toml(path: Path, unreadable: str) -> dict[str, Any]:
    """The TOML table in ``path``; BadInput if it is malformed or cannot be read.

    ``unreadable`` is the message for a file that cannot be read, with ``{path}`` and
    ``{reason}`` in it.
    """
    text = read_text(path, unreadable)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise BadInput(f"{path.name}: malformed TOML: {error}") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise BadInput(f"{path.name}: malformed TOML: nested too deeply") from None


#: The largest settings or recording file read whole (bytes): far above any real one, it
#: keeps a mistaken path (a disk image, /dev/zero) from filling memory. Raise it with
#: TESTBED_MAX_FILE_BYTES.
MAX_FILE_BYTES = 256 * 1024 * 1024


def read_text(path: Path, unreadable: str) -> str:
    """The UTF-8 text of ``path``: the one reader of every text file a person hands in.

    BadInput (one line) if it cannot be read (``unreadable``, with ``{path}`` and
    ``{reason}``), is not a regular file, is larger than ``MAX_FILE_BYTES``, or is not
    UTF-8 (the byte offset of the first bad byte is named).
    """
    limit = env_limit("TESTBED_MAX_FILE_BYTES", MAX_FILE_BYTES)
    try:
        with path.open("rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):  # a pipe: `<(...)` is fine
                raise BadInput(unreadable.format(path=path, reason="not a regular file"))
            data = _read_at_most(handle, limit + 1)
    except OSError as error:
        raise BadInput(unreadable.format(path=path, reason=error.strerror)) from None
    if len(data) > limit:
        raise BadInput(f"{path.name}: larger than {limit:,} bytes "
                       "(set TESTBED_MAX_FILE_BYTES to raise the limit)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadInput(f"{path.name}: not UTF-8 text (byte {error.start}: "
                       f"{data[error.start:error.start + 1]!r}); save it as UTF-8") from None


def _read_at_most(handle: Any, size: int) -> bytes:
    """At most ``size`` bytes, read in 1 MiB pieces: ``read(size)`` allocates ``size`` at once."""
    pieces: list[bytes] = []
    left = size
    while left > 0:
        piece = handle.read(min(left, 1 << 20))
        if not piece:
            break
        pieces.append(piece)
        left -= len(piece)
    return b"".join(pieces)


#: The largest value any TESTBED_* limit may be raised to: far past any run that ends in
#: a day, small enough to be a machine integer (99999999999999999999 was an OverflowError).
ENV_CEILING = 10**15


def whole_rule(where: str, value: object, most: int = ENV_CEILING) -> int:
    """The rule of every count limit, wherever it is given: a whole number from 1 to ``most``.

    A bool is not a number here (``True`` is not one look); numpy's ints are. BadInput
    names ``where`` (a flag, a variable or a parameter) and the rule.
    """
    if isinstance(value, bool) or not isinstance(value, Integral) or not 1 <= int(value) <= most:
        raise BadInput(f"{where}: must be a whole number from 1 to {most:,} (got {value!r})")
    return int(value)


def seconds_rule(where: str, value: object, most: float) -> float:
    """The rule of every timeout and floor, wherever it is given: a finite number of seconds
    greater than 0 and at most ``most``.

    ``nan`` would switch a floor off (every comparison with it is false) and a huge one
    (``1e300``) overflows the timer that enforces a timeout: both refused, by this one rule.
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not _seconds(value, most):
        raise BadInput(f"{where}: {seconds_text(most)} (got {value!r})")
    return float(value)


def _seconds(value: float, most: float) -> bool:
    return math.isfinite(value) and 0 < value <= most


def seconds_text(most: float) -> str:
    """The seconds rule as words, for messages and help."""
    return f"must be a number of seconds greater than 0 and at most {most:,g}"


def env_limit(name: str, default: int, environ: Mapping[str, str] = os.environ) -> int:
    """A documented upper limit, raised (or lowered) by the environment variable ``name``.

    The rule: ``whole_rule`` (1 to ``ENV_CEILING``, ``_`` separators allowed); anything
    else (``nan``, ``abc``, ``-1``, ``²``) is BadInput naming the variable and the rule.
    """
    text = environ.get(name)
    if text is None or not text.strip():
        return default
    digits = text.strip().replace("_", "")
    # ASCII only: "²".isdigit() is true but int("²") fails, and int() reads "٣" as 3.
    value = int(digits) if digits.isascii() and digits.isdigit() else 0
    if not 1 <= value <= ENV_CEILING:  # whole_rule's range, with the text as it was written
        raise BadInput(f"{name}: must be a whole number from 1 to {ENV_CEILING:,} (got {text!r})")
    return value


def env_number(name: str, default: float, most: float,
               environ: Mapping[str, str] = os.environ) -> float:
    """A documented floor or timeout from the environment variable ``name``.

    The rule: ``seconds_rule`` with ``most``; ``nan``, ``-1`` or ``abc`` is BadInput.
    """
    text = environ.get(name)
    if text is None or not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not _seconds(value, most):  # seconds_rule, with the text as it was written
        raise BadInput(f"{name}: {seconds_text(most)} (got {text!r})")
    return value


#: A user's check's per-look wall-clock timeout, by ``--check-timeout``, by
#: ``TESTBED_CHECK_TIMEOUT_S`` or by ``CheckBudget(timeout_s=...)``: the one rule is
#: ``seconds_rule`` with this bound (a day: no run that ends waits longer for one answer,
#: and ``1e300`` overflowed the interval timer at every look).
CHECK_TIMEOUT_ENV = "TESTBED_CHECK_TIMEOUT_S"
MAX_CHECK_TIMEOUT_S = 86_400.0
#: Looks a check may ask for without a verdict, by ``--max-looks``, ``TESTBED_MAX_LOOKS`` or
#: ``CheckBudget(max_looks=...)``: the one rule is ``whole_rule`` (1 to ``ENV_CEILING``).
MAX_LOOKS_ENV = "TESTBED_MAX_LOOKS"


#: Every limit the environment may set, with its default, checked at each door before
#: any work (``check_environment``): names here and the readers' constants are the same.
_WHOLE_ENV = {
    "TESTBED_MAX_FILE_BYTES": MAX_FILE_BYTES,
    "TESTBED_MAX_RUNS": 1,
    "TESTBED_MAX_SWEEP_POINTS": 1,
    "TESTBED_MAX_WORKERS": 1,
    MAX_LOOKS_ENV: 1,
    "TESTBED_MAX_ROLLOUT_EVENTS": 1,
}
#: The floats: the crash-period floor (at most a minute: a floor above that refuses the
#: shipped worlds) and a user check's per-look timeout (at most a day).
_NUMBER_ENV = {"TESTBED_MIN_PERIOD_S": 60.0, CHECK_TIMEOUT_ENV: MAX_CHECK_TIMEOUT_S}


def check_environment() -> None:
    """Every TESTBED_* limit and SOURCE_DATE_EPOCH by its rule, before any work.

    (Not COLUMNS: a bad one is ignored, as terminals and libraries do; ``sim.show.columns``.)

    BadInput for the first bad one.
    """
    for name, default in _WHOLE_ENV.items():
        env_limit(name, default)
    for name, most in _NUMBER_ENV.items():
        env_number(name, 1.0, most)
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch and not (epoch.isascii() and epoch.isdigit() and int(epoch) <= ENV_CEILING):
        # matplotlib reads it with int() when a figure is saved: a ValueError traceback.
        raise BadInput(f"SOURCE_DATE_EPOCH: must be whole seconds since 1970, 0 or more "
                       f"(got {epoch!r})")
    folder = os.environ.get("TESTBED_SCENARIOS")
    if folder and not Path(folder).is_dir():
        raise BadInput(f"TESTBED_SCENARIOS: must be an existing folder (got {folder!r})")


def at_most(option: str, value: int, limit: int, env: str | None = None) -> None:
    """BadInput unless ``1 <= value <= limit``: the message says how to raise the limit
    (``env``), when one can."""
    if value < 1:
        raise BadInput(f"{option}: must be at least 1 (got {value:,})")
    if value > limit:
        raise BadInput(f"{option}: must be at most {limit:,} (got {value:,})"
                       + (f"; set {env} to raise the limit" if env else ""))


def first_seed(value: int) -> int:
    """The command line's ``--seed``: 0 or more, at most MAX_SEED (compare, hunt, rollout, serve alike)."""
    if value < 0:
        raise BadInput(f"--seed: must be 0 or more (got {value})")
    return seed_value("--seed", value)  # the API's upper bound, stated once below


#: The largest seed: a run's seed is a row of the ``to_pandas()`` tables, whose ``seed``
#: column is a nullable Int64 (sim.runtime.frames.INT); a larger one turns it into Python objects.
MAX_SEED = 2**63 - 1
#: The rule every seed door states (the command line, the API, the files' ``seed`` fields).
SEED_RULE = "a whole number from 0 to 2**63 - 1"
_SEED_RULE = SEED_RULE


def seed_range(field: str, first: int, count: int) -> range:
    """Seeds ``first`` .. ``first + count - 1`` (``--seed S --runs N``), refused when the last
    passes MAX_SEED: the runs past it would be seeds no table can hold.

    ``first`` has passed its own door (``first_seed``, a file's seed field); ``field`` names
    what sets the count (``--runs``, a sweep file's ``seeds``).
    """
    last = first + count - 1
    if last > MAX_SEED:
        raise BadInput(f"{field}: the last seed ({first} + {count} - 1 = {last}) must be at "
                       f"most 2**63 - 1; lower the first seed or the count")
    return range(first, first + count)


def seed_value(field: str, value: object) -> int:
    """One seed given in Python: a whole number (numpy's ints too, not a bool) in 0..MAX_SEED.

    The command line's ``--seed`` rule (0 or more) with the tables' upper bound; ``field``
    names the parameter in the message.
    """
    if not _is_seed(value):
        raise BadInput(f"{field}: must be {_SEED_RULE} (got {value!r})")
    return int(cast(Integral, value))


def _is_seed(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, Integral) and 0 <= int(value) <= MAX_SEED


def seed_values(field: str, values: object) -> tuple[int, ...]:
    """Seeds given in Python (``range(20)``, ``[0, 1]``): at least one, each as ``seed_value``.

    A bare number or a string is refused, not read as a count or digit by digit: ``5``
    could mean seed 5 or five seeds, so the message shows both spellings.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise BadInput(f"{field}: give the seeds as a list or range, e.g. [{values!r}] or "
                       f"range(5) (got {values!r})")
    chosen = tuple(values)
    if not chosen:
        raise BadInput(f"{field}: give at least one seed")
    for value in chosen:
        if not _is_seed(value):
            raise BadInput(f"{field}: each must be {_SEED_RULE} (got {value!r})")
    return tuple(int(cast(Integral, value)) for value in chosen)


def load_settings(
    model: type[Model],
    name_or_path: str,
    shipped: Callable[[], Mapping[str, Path]],
    kind: str,
    sets: Sequence[str] = (),
) -> Model:
    """Load a shipped file by name, or a TOML file by path, apply overrides and validate.

    The file's stem is the ``name`` unless the file sets one.
    """
    path = locate(name_or_path, shipped, kind)
    raw = read_toml(path, "{path}: cannot read scenario file ({reason})")
    raw.setdefault("name", path.stem)
    return validated(model, apply_sets(raw, sets), path.name)
