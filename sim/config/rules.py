"""The rules every value a person gives obeys, wherever it is given: counts, seconds, limits.

A flag, an environment variable, a file's field and a Python parameter are judged by the
same function, and ``BadInput`` names where the value came from. Standard library only:
the command line's parser imports it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from numbers import Integral


class BadInput(Exception):
    """Input a person can fix: reported as one line, exit status 2."""


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


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the choice nearest ``word`` (an edit or so away), else ""."""
    import difflib  # noqa: PLC0415 -- only for a message

    near = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {near[0]}?)" if near else ""
