"""The Python API's door: each argument's type and range judged before any work.

``sim.api`` calls one of these at the top of each function, so a wrong type (``42`` for a
scenario, a list for ``options``, ``{5: 5}``, ``progress="x"``) is the project's
``BadInput`` naming the parameter and the rule, never a ``TypeError`` from deep inside;
seed iterables are counted against the command line's run limit before they are
consumed (a generator, ``itertools.count()``, ``range(10**9)``). The environment's limits
are judged here too (``check_environment``), as the command line judges them.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Mapping, Sized
from typing import Any, TypeVar

from platform_testbed.sim.config.settings import (
    BadInput,
    at_most,
    check_environment,
    seed_values,
)

T = TypeVar("T")

__all__ = [
    "check_environment", "flag", "guarded_factory", "listed", "options", "path_like", "progress",
    "seeds_bounded", "settings_like",
]


def path_like(field: str, value: object, what: str) -> str:
    """A shipped name or a path given in Python: a ``str`` or ``os.PathLike`` the OS can open.

    A NUL byte or a lone surrogate would be a ``ValueError``/``UnicodeEncodeError`` at
    ``open``: refused here, with the rule.
    """
    if not isinstance(value, (str, os.PathLike)):
        raise BadInput(f"{field}: must be {what} (got {value!r})")
    try:
        text = os.fspath(value)
    except TypeError:  # a PathLike whose __fspath__ gives bytes or nothing
        raise BadInput(f"{field}: must be {what} (got {value!r})") from None
    if not isinstance(text, str):
        raise BadInput(f"{field}: must be {what} as text, not bytes (got {value!r})")
    if not text or "\0" in text:
        raise BadInput(f"{field}: must be {what}: not empty, no NUL character (got {text!r})")
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        raise BadInput(f"{field}: must be {what} the file system can spell "
                       f"(got {text!r})") from None
    return text


def settings_like(field: str, value: object, loaded: type, what: str) -> None:
    """``value`` is an already loaded ``loaded`` or a name or path (``path_like``)."""
    if not isinstance(value, loaded):
        path_like(field, value, f"{what}, or a loaded {loaded.__name__}")


def options(value: object) -> Mapping[str, Any] | None:
    """``options=``: None or a mapping from option names (strings) to values."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise BadInput("options: must be a mapping of option names to values, e.g. "
                       f"{{'look_delay_s': 5}} (got {value!r})")
    for key in value:
        if not isinstance(key, str) or not key:
            raise BadInput(f"options: each key must be an option name (a string), e.g. "
                           f"'look_delay_s' or 'count.look_delay_s' (got {key!r})")
    return value


def flag(field: str, value: object) -> bool:
    """A yes/no parameter: ``True`` or ``False`` only (``"yes"`` and ``1`` are not)."""
    if not isinstance(value, bool):
        raise BadInput(f"{field}: must be True or False (got {value!r})")
    return value


def seeds_bounded(field: str, values: object, limit: int, env: str | None = None
                  ) -> tuple[int, ...] | None:
    """Seeds given in Python, at most ``limit`` (raised by ``env``), counted before they are spelled out.

    A sized one (``range(10**9)``) is judged by its length; any other iterable (a
    generator, ``itertools.count()``) is taken one past the limit at most, so an endless
    one is refused, not consumed until memory runs out. None: the scenario's own seed.
    """
    if values is None:
        return None
    if isinstance(values, Sized) and not isinstance(values, (str, bytes)):
        at_most(field, max(len(values), 1), limit, env)
    elif isinstance(values, Iterable) and not isinstance(values, (str, bytes)):
        try:
            taken = list(itertools.islice(values, limit + 1))
        except BadInput:
            raise
        except Exception as error:  # a user's generator that raises is its input's fault
            raise BadInput(f"{field}: the seeds' iterator raised "
                           f"{type(error).__name__}: {error}") from None
        if len(taken) > limit:
            raise BadInput(f"{field}: more than {limit:,} seeds (the run limit)"
                           + (f"; set {env} to raise the limit" if env else ""))
        values = taken
    return seed_values(field, values)


#: The most overrides or checks one call takes: far past any real list, it bounds an
#: endless iterator (``itertools.count()``) before it fills memory.
MAX_ITEMS = 10_000


def listed(field: str, values: Iterable[T]) -> list[T]:
    """An iterable's items as a list: at most ``MAX_ITEMS``, and one whose iterator raises
    is BadInput naming ``field`` (the caller's generator, not the testbed, went wrong)."""
    try:
        taken = list(itertools.islice(values, MAX_ITEMS + 1))
    except BadInput:
        raise
    except Exception as error:
        raise BadInput(f"{field}: its iterator raised {type(error).__name__}: {error}") from None
    if len(taken) > MAX_ITEMS:
        raise BadInput(f"{field}: more than {MAX_ITEMS:,} items")
    return taken


def progress(value: object) -> None:
    """``progress=``: None or a callable ``progress(round, tried, found, shrinking)``."""
    if value is not None and not callable(value):
        raise BadInput(f"progress: must be None or a callable progress(round, tried, found, "
                       f"shrinking) (got {value!r})")


def guarded_factory(make: Callable[[Mapping[str, Any]], T], is_check: Callable[[object], bool]
                    ) -> Callable[[Mapping[str, Any]], T]:
    """A user's ``factory(options) -> check`` whose failure is BadInput naming ``check``.

    A factory that raises, or returns what is not a check, is the caller's input gone
    wrong: one line naming the parameter, not the factory's traceback from inside a hunt.
    """
    def made(chosen: Mapping[str, Any]) -> T:
        try:
            check = make(chosen)
        except BadInput:
            raise
        except Exception as error:
            raise BadInput(f"check: the factory raised {type(error).__name__}: {error} "
                           f"(with options {chosen!r})") from None
        if not is_check(check):
            raise BadInput(f"check: the factory must return a check with a next() method "
                           f"(got {check!r})")
        return check

    return made
