"""The sans-I/O check protocol: looks in, the next step out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from .model import Look, Verdict, Wait

Step = Wait | Verdict


@runtime_checkable
class Check(Protocol):
    """A deploy health check: a pure function of the looks taken so far.

    The driver (simulator, replay, real deploy tool) calls ``next`` with no looks first;
    on ``Wait(s)`` it waits ``s`` seconds, takes a look, appends it and calls again,
    until a ``Verdict`` comes back. Same inputs, same answer.
    """

    name: str

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Return how long to wait before the next look, or the verdict."""
        ...
