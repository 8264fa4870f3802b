"""Pure deploy health checks: looks in, a wait or a verdict out. No simpy, clock or I/O."""

from checks.layered import CountCheck, LayeredCheck, TimestampCheck
from checks.model import MACHINE_STATES, Event, Look, MachineSnapshot, Verdict, Wait
from checks.protocol import Check, Step
from checks.registry import BUILTIN_CHECKS, make_check

__all__ = [
    "BUILTIN_CHECKS",
    "MACHINE_STATES",
    "Check",
    "CountCheck",
    "Event",
    "LayeredCheck",
    "Look",
    "MachineSnapshot",
    "Step",
    "TimestampCheck",
    "Verdict",
    "Wait",
    "make_check",
]
