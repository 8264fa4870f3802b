"""The ranges a check's options take, declared beside each field as data.

A built-in check declares a range in its field's metadata
(``poll_s: float = field(default=1.0, metadata=INTERVAL)``); the loader reads it to refuse
a bad ``--check-opt`` or ``[check]`` value before any world runs, naming where it came
from, and each check's ``__post_init__`` calls ``refuse_out_of_range`` so that one built
by hand is held to the same rule. A negative wait would be refused only mid-run by the
driver, and a zero poll interval would look again at the same instant until the look
limit: hence ``INTERVAL`` is above zero.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

#: The metadata key under which a field's ``Range`` is declared.
RANGE_KEY = "checks.range"


class OptionError(ValueError):
    """A check option outside the range its field declares."""


@dataclass(frozen=True, slots=True)
class Range:
    """A finite number at least ``low`` (above it when ``above``), whole when ``whole``."""

    low: float
    above: bool = False
    whole: bool = False

    def rule(self) -> str:
        """The rule in words, e.g. ``a finite number of seconds >= 0``."""
        kind = "a whole number" if self.whole else "a finite number of seconds"
        return f"{kind} {'>' if self.above else '>='} {self.low:g}"

    def allows(self, value: Any) -> bool:
        """Whether ``value`` (a number; a bool is not one) keeps this rule."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.whole and not isinstance(value, int):
            return False
        if not math.isfinite(value):
            return False
        return value > self.low if self.above else value >= self.low


# Written out, not built by a helper: module-level calls run at import, before mutation
# testing can switch a mutant on, so a helper's mutants could never be killed.
#: A delay, deadline or window: zero means "at once".
SECONDS: Mapping[str, Range] = MappingProxyType({RANGE_KEY: Range(0)})
#: A poll or backoff interval: zero would look again at the same instant, forever.
INTERVAL: Mapping[str, Range] = MappingProxyType({RANGE_KEY: Range(0, above=True)})
#: A count of things, zero included.
COUNT: Mapping[str, Range] = MappingProxyType({RANGE_KEY: Range(0, whole=True)})


def declared_range(field: dataclasses.Field[Any]) -> Range | None:
    """The range a dataclass field declares, if any."""
    rule = field.metadata.get(RANGE_KEY)
    return rule if isinstance(rule, Range) else None


def problem(check: str, option: str, rule: Range, value: Any) -> str | None:
    """``None`` if ``value`` keeps ``rule``, else ``count's poll_s must be …``."""
    if rule.allows(value):
        return None
    return f"{check}'s {option} must be {rule.rule()}"


def refuse_out_of_range(check: Any) -> None:
    """Raise OptionError for the first field of ``check`` outside its declared range."""
    for field in dataclasses.fields(check):
        rule = declared_range(field)
        if rule is None:
            continue
        value = getattr(check, field.name)
        if value is None:  # an optional option left unset (the breaker's threshold)
            continue
        found = problem(check.name, field.name, rule, value)
        if found is not None:
            raise OptionError(f"{found} (got {value!r})")
