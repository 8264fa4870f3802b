"""The sans-I/O check protocol: looks in, the next step out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from .model import Look, Update, Verdict, Wait

Step = Wait | Verdict | Update


@runtime_checkable
class Check(Protocol):
    """A deploy health check: a pure function of the looks taken so far.

    The driver (simulator, replay, real deploy tool) calls ``next`` with no looks first;
    on ``Wait(s)`` it waits ``s`` seconds, takes a look, appends it and calls again,
    until a ``Verdict`` comes back. Same inputs, same answer. ``Update`` is asked only
    by a check that deploys (``Deploying``), of a driver that carries it out.
    """

    name: str

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Return how long to wait before the next look, or the verdict."""
        ...


@runtime_checkable
class Deploying(Protocol):
    """A check that rolls the release out itself, and draws from the run's seed.

    Before a run the driver hands it the run's seed (None: the driver has none) and
    whether it carries out ``Update`` steps, and drives the check it gets back: the
    inputs arrive as fields, so the check stays a pure function of them. That check's
    ``deploys`` says whether it will ask for ``Update``: then the driver leaves the
    machines as they were before the publish, its first look is the fleet before any
    update, and it updates only what the check names.
    """

    @property
    def deploys(self) -> bool:
        """Whether this check rolls the release out itself (asks for ``Update``)."""
        ...

    def for_driver(self, seed: int | None, updates: bool) -> Check:
        """The check to drive in a run with this seed, by a driver that can update or not."""
        ...


def prepare(check: Check, seed: int | None, updates: bool) -> tuple[Check, bool]:
    """The check a driver drives (``for_driver`` for a ``Deploying`` one), and whether it deploys."""
    # Looked up on the type: a user's check may have properties that raise, and a
    # runtime protocol's isinstance would read them.
    if getattr(type(check), "for_driver", None) is None:
        return check, False
    ready = check.for_driver(seed, updates)  # type: ignore[attr-defined]
    return ready, bool(getattr(ready, "deploys", False))
