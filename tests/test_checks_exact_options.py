"""Exact tests of checks/options.py: each rule at its boundary, and every built-in's ranges."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from platform_testbed.checks import BUILTIN_CHECKS, CircuitBreakerCheck, CountCheck, FlyctlSmokeCheck
from platform_testbed.checks.options import (
    COUNT,
    INTERVAL,
    RANGE_KEY,
    SECONDS,
    OptionError,
    Range,
    declared_range,
    problem,
    refuse_out_of_range,
)

#: What each built-in's options must be, from what each option means: a delay, deadline
#: or window may be 0 ("at once"); a poll or backoff interval may not (the check would
#: look again at the same instant); a count is a whole number, 0 included (a breaker
#: threshold of 0 trips at the first failure, tests/test_checks_exact_memo.py).
EXPECTED: dict[str, dict[str, Range]] = {
    "count": {"look_delay_s": Range(0), "start_timeout_s": Range(0),
              "poll_s": Range(0, above=True)},
    "timestamp": {"look_delay_s": Range(0), "start_timeout_s": Range(0),
                  "poll_s": Range(0, above=True)},
    "restart-counter": {"look_delay_s": Range(0), "start_timeout_s": Range(0),
                        "poll_s": Range(0, above=True)},
    "flyctl-smoke": {"window_s": Range(0), "min_uptime_s": Range(0),
                     "backoff_min_s": Range(0, above=True),
                     "backoff_max_s": Range(0, above=True), "wait_timeout_s": Range(0),
                     "poll_s": Range(0, above=True), "listen_wait_s": Range(0),
                     "max_unavailable": Range(0, above=True),
                     "deploy_retries": Range(0, whole=True)},
    "min-healthy-time": {"min_healthy_s": Range(0), "healthy_deadline_s": Range(0),
                         "progress_deadline_s": Range(0), "poll_s": Range(0, above=True)},
    "circuit-breaker": {"threshold": Range(0, whole=True),
                        "failure_percent": Range(0, whole=True),
                        "healthy_after_s": Range(0), "completion_timeout_s": Range(0),
                        "poll_s": Range(0, above=True)},
}


def test_every_builtin_declares_the_expected_ranges() -> None:
    """Each built-in's numeric options carry the range their meaning asks for, and no others."""
    for name, cls in BUILTIN_CHECKS.items():
        declared = {f.name: r for f in dataclasses.fields(cls) if (r := declared_range(f))}
        assert declared == EXPECTED[name], name


def test_the_declarations_are_the_documented_metadata() -> None:
    """The shared declarations are ``{RANGE_KEY: Range}``, the key a user's dataclass may use."""
    assert RANGE_KEY == "checks.range"
    assert dict(SECONDS) == {RANGE_KEY: Range(0)}
    assert dict(INTERVAL) == {RANGE_KEY: Range(0, above=True)}
    assert dict(COUNT) == {RANGE_KEY: Range(0, whole=True)}


def test_a_field_without_a_range_or_with_other_metadata_declares_none() -> None:
    """Only a Range under RANGE_KEY is a declaration."""

    @dataclasses.dataclass
    class Own:
        plain: float = 1.0
        other: float = dataclasses.field(default=1.0, metadata={RANGE_KEY: ">= 0"})
        ranged: float = dataclasses.field(default=1.0, metadata={RANGE_KEY: Range(2)})

    found = [declared_range(f) for f in dataclasses.fields(Own)]
    assert found == [None, None, Range(2)]


def test_rule_words() -> None:
    """The rule reads as the message says it: kind, comparison and bound."""
    assert Range(0).rule() == "a finite number of seconds >= 0"
    assert Range(0, above=True).rule() == "a finite number of seconds > 0"
    assert Range(0, whole=True).rule() == "a whole number >= 0"
    assert Range(0.5, above=True, whole=True).rule() == "a whole number > 0.5"


@pytest.mark.parametrize(("rule", "value", "ok"), [
    (Range(0), 0, True),
    (Range(0), 0.0, True),
    (Range(0), -1e-9, False),
    (Range(0), -1, False),
    (Range(0), 1e9, True),
    (Range(0), math.nan, False),
    (Range(0), math.inf, False),
    (Range(0), -math.inf, False),
    (Range(0), 1.5, True),
    (Range(0, above=True), 0, False),
    (Range(0, above=True), 0.0, False),
    (Range(0, above=True), 1e-9, True),
    (Range(0, above=True), -1, False),
    (Range(2), 2, True),
    (Range(2), 1.999, False),
    (Range(0, whole=True), 0, True),
    (Range(0, whole=True), -1, False),
    (Range(0, whole=True), 1.0, False),
    (Range(0, whole=True), 3, True),
    (Range(0), True, False),
    (Range(0), False, False),
    (Range(0), "1", False),
    (Range(0), None, False),
])
def test_allows_at_the_boundaries(rule: Range, value: Any, ok: bool) -> None:
    """A finite number on the right side of the bound passes; anything else does not."""
    assert rule.allows(value) is ok


def test_problem_names_check_option_and_rule() -> None:
    """No problem inside the range; outside, one phrase naming the check and the option."""
    assert problem("count", "poll_s", Range(0, above=True), 0.5) is None
    assert problem("count", "poll_s", Range(0, above=True), 0) == (
        "count's poll_s must be a finite number of seconds > 0")


def test_a_check_built_by_hand_is_held_to_its_ranges() -> None:
    """Building a built-in with an option out of range raises OptionError, with the value."""
    with pytest.raises(OptionError) as raised:
        CountCheck(look_delay_s=-1)
    assert str(raised.value) == "count's look_delay_s must be a finite number of seconds >= 0 (got -1)"
    assert isinstance(raised.value, ValueError)
    with pytest.raises(OptionError, match=r"^flyctl-smoke's poll_s must be .* > 0 \(got 0\)$"):
        FlyctlSmokeCheck(poll_s=0)


def test_the_first_option_out_of_range_is_named() -> None:
    """Fields are checked in order, so of two bad options the earlier one is reported."""
    with pytest.raises(OptionError, match="look_delay_s"):
        CountCheck(look_delay_s=-1, poll_s=0)


def test_unset_and_unranged_fields_do_not_stop_the_later_ones() -> None:
    """An unset threshold (None) and a field with no range are skipped; later fields are checked."""
    assert CircuitBreakerCheck().threshold is None
    with pytest.raises(OptionError, match=r"^circuit-breaker's poll_s .*\(got 0\)$"):
        CircuitBreakerCheck(poll_s=0)
    with pytest.raises(OptionError, match=r"^circuit-breaker's threshold must be a whole number"):
        CircuitBreakerCheck(threshold=-1)


def test_the_defaults_and_the_boundaries_build() -> None:
    """Every built-in builds with its defaults, and with each range's edge value."""
    for name, cls in BUILTIN_CHECKS.items():
        cls()
        edges = {k: (1e-9 if r.above else 0) for k, r in EXPECTED[name].items()}
        built = cls(**edges)
        assert all(getattr(built, k) == v for k, v in edges.items()), name


def test_refuse_out_of_range_on_a_users_dataclass() -> None:
    """A user's dataclass may declare ranges the same way and be held to them."""

    @dataclasses.dataclass
    class Mine:
        name = "mine"
        wait_s: float = dataclasses.field(default=1.0, metadata=SECONDS)

    refuse_out_of_range(Mine())
    with pytest.raises(OptionError, match=r"^mine's wait_s must be .* >= 0 \(got -2\)$"):
        refuse_out_of_range(Mine(wait_s=-2))
