"""Settings files: TOML read by shipped name or path, ``--set`` overrides, one-line errors."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from numbers import Integral
from typing import TYPE_CHECKING, Any, TypeVar, cast

from platform_testbed.sim.config import options
from platform_testbed.sim.config.options import MAX_SEED, OPTIONS
from platform_testbed.sim.config.rules import (
    ENV_CEILING,
    BadInput,
    did_you_mean,
    env_limit,
    env_number,
    seconds_rule,
    seconds_text,
    whole_rule,
)

__all__ = ["ENV_CEILING", "MAX_SEED", "BadInput", "env_limit", "env_number", "seconds_rule",
           "seconds_text", "whole_rule"]

if TYPE_CHECKING:
    from pathlib import Path

    from pydantic import BaseModel, ValidationError

# pydantic loads with the first file validated, not with BadInput: the command line's
# parser (and a shell's Tab) imports this module and must stay light.
Model = TypeVar("Model", bound="BaseModel")


def parse_value(text: str) -> Any:
    """Read a ``--set`` value as TOML (numbers, booleans, quoted strings), else as a bare string."""
    import tomllib  # noqa: PLC0415 -- the parser imports this module; --help reads no TOML

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
    return did_you_mean(str(loc[-1]), fields) if loc else ""


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
        from pathlib import Path  # noqa: PLC0415 -- see parse_value

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
    import tomllib  # noqa: PLC0415 -- see parse_value

    text = read_text(path, unreadable)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise BadInput(f"{path.name}: malformed TOML: {error}") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise BadInput(f"{path.name}: malformed TOML: nested too deeply") from None


def read_text(path: Path, unreadable: str) -> str:
    """The UTF-8 text of ``path``: the one reader of every text file a person hands in.

    BadInput (one line) if it cannot be read (``unreadable``, with ``{path}`` and
    ``{reason}``), is not a regular file, is larger than the ``max_file_bytes`` limit, or is not
    UTF-8 (the byte offset of the first bad byte is named).
    """
    limit = options.limit("max_file_bytes")
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
                       f"(set {OPTIONS['max_file_bytes'].env_name} to raise the limit)")
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


def check_environment() -> None:
    """Every TESTBED_* limit and SOURCE_DATE_EPOCH by its rule, before any work.

    (Not COLUMNS: a bad one is ignored, as terminals and libraries do; ``sim.show.columns``.)

    BadInput for the first bad one.
    """
    for entry in OPTIONS.values():  # every variable of the registry, by its entry's rule
        entry.from_env(os.environ)
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch and not (epoch.isascii() and epoch.isdigit() and int(epoch) <= ENV_CEILING):
        # matplotlib reads it with int() when a figure is saved: a ValueError traceback.
        raise BadInput(f"SOURCE_DATE_EPOCH: must be whole seconds since 1970, 0 or more "
                       f"(got {epoch!r})")


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
