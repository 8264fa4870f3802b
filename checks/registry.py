"""The built-in checks by name, and building one from a scenario's [check] options."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from .breaker import CircuitBreakerCheck
from .flyctl import FlyctlSmokeCheck
from .layered import CountCheck, TimestampCheck
from .minhealthy import MinHealthyTimeCheck
from .protocol import Check
from .restarts import RestartCounterCheck

#: Read-only: a module's state is the same for every driver in the process.
BUILTIN_CHECKS: Mapping[str, type[Any]] = MappingProxyType({
    "count": CountCheck,
    "timestamp": TimestampCheck,
    "flyctl-smoke": FlyctlSmokeCheck,
    "min-healthy-time": MinHealthyTimeCheck,
    "restart-counter": RestartCounterCheck,
    "circuit-breaker": CircuitBreakerCheck,
})


def make_check(name: str, options: Mapping[str, Any]) -> Check:
    """Build a built-in check, passing only the options its fields declare."""
    cls = BUILTIN_CHECKS[name]
    known = {f.name for f in dataclasses.fields(cls)}
    check: Check = cls(**{k: v for k, v in options.items() if k in known})
    return check
