"""Pure deploy health checks: looks in, a wait or a verdict out. No simpy, clock or I/O."""

from checks.breaker import CircuitBreakerCheck
from checks.flyctl import FlyctlSmokeCheck
from checks.layered import CountCheck, LayeredCheck, TimestampCheck
from checks.minhealthy import MinHealthyTimeCheck
from checks.model import MACHINE_STATES, Event, Look, MachineSnapshot, Verdict, Wait
from checks.protocol import Check, Step
from checks.registry import BUILTIN_CHECKS, make_check
from checks.restarts import RestartCounterCheck

__all__ = [
    "BUILTIN_CHECKS",
    "MACHINE_STATES",
    "Check",
    "CircuitBreakerCheck",
    "CountCheck",
    "Event",
    "FlyctlSmokeCheck",
    "LayeredCheck",
    "Look",
    "MachineSnapshot",
    "MinHealthyTimeCheck",
    "RestartCounterCheck",
    "Step",
    "TimestampCheck",
    "Verdict",
    "Wait",
    "make_check",
]
