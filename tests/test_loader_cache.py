"""Built-in checks are built once per distinct ask, and the cache never changes a judgement."""

from __future__ import annotations

import pytest

from platform_testbed.sim.checkload.loader import build_checks
from platform_testbed.sim.config.scenario import BadInput


def test_same_ask_gives_the_same_built_checks() -> None:
    """Two builds of the same built-ins with the same [check] table share their instances."""
    first = build_checks(["count", "timestamp"], {"look_delay_s": 12.5})
    again = build_checks(["count", "timestamp"], {"look_delay_s": 12.5})
    assert [a.check for a in first] == [b.check for b in again]
    assert all(a.check is b.check for a, b in zip(first, again, strict=True))


def test_another_table_builds_other_checks() -> None:
    """A different option value builds a check with that value, not the cached one."""
    short = build_checks(["count"], {"look_delay_s": 2.0})[0]
    long = build_checks(["count"], {"look_delay_s": 40.0})[0]
    assert short.check is not long.check
    assert long.setup.values()["look_delay_s"] == 40.0


def test_equal_values_of_other_types_are_judged_apart() -> None:
    """``True`` equals ``1`` in Python, yet after a cached ``1`` a bool is still refused."""
    build_checks(["circuit-breaker"], {"failure_percent": 1})
    with pytest.raises(BadInput, match="failure_percent"):
        build_checks(["circuit-breaker"], {"failure_percent": True})


def test_bad_input_is_not_cached() -> None:
    """A refused ask is refused again (errors are not kept), and a good one still builds."""
    for _ in range(2):
        with pytest.raises(BadInput, match="look_delay_s"):
            build_checks(["count"], {"look_delay_s": "soon"})
    assert build_checks(["count"], {"look_delay_s": 3.0})[0].setup.values()["look_delay_s"] == 3.0
