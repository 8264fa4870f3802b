"""Pure deploy health checks: looks in, a wait or a verdict out. No simpy, clock or I/O."""

from .breaker import CircuitBreakerCheck
from .flyctl import FlyctlSmokeCheck
from .layered import CountCheck, LayeredCheck, TimestampCheck
from .minhealthy import MinHealthyTimeCheck
from .model import MACHINE_STATES, Event, Look, MachineSnapshot, Verdict, Wait
from .protocol import Check, Step
from .registry import BUILTIN_CHECKS, make_check
from .restarts import RestartCounterCheck

__all__ = (
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
)
