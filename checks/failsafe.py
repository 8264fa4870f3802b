"""The rule every check applies first: a look that lost machines is never a pass."""

from __future__ import annotations

from collections.abc import Sequence

from .memo import LookMemo
from .model import Look, Verdict


def first_seen(looks: Sequence[Look], seen: dict[str, int] | None = None) -> dict[str, int]:
    """Each machine id in ``looks`` -> the time of the first look that lists it, in that order.

    ``seen``: the map for the looks before these, extended in place.
    """
    seen = {} if seen is None else seen
    for look in looks:
        for machine in look.machines:
            seen.setdefault(machine.id, look.at_ms)
    return seen


def lost_machines(
    name: str, looks: Sequence[Look], memo: LookMemo[dict[str, int]] | None = None
) -> Verdict | None:
    """A failing verdict if the newest look is empty or lacks a machine an earlier look had.

    A check that judges "every machine" would pass vacuously on a look with no machines,
    and a machine that vanished from the API's answer cannot be shown healthy: either
    way the gate cannot see what it approves, so it fails safe and says why. The machine
    named is the first missing one in look order. With a ``memo`` (the calling check's
    own, see ``checks.memo``), a driver that calls it with one more look each time folds
    each look once (the ids seen are kept between calls), so its work per call is the
    newest look's machines; without one it folds every look.
    """
    if not looks:
        return None
    latest = looks[-1]
    if not latest.machines:
        return Verdict(
            False,
            f"{name}: the look at {latest.at_ms} ms shows no machines, so no machine can be "
            "shown healthy; a gate that sees nothing must not approve",
            layer="no-machines",
        )
    before = looks[:-1]
    # Keyed by nothing: the ids seen depend on the looks alone.
    seen, unseen = (dict[str, int](), before) if memo is None else memo.resume(None, before, dict)
    first_seen(unseen, seen)
    present = {m.id for m in latest.machines}
    machine_id = next((key for key in seen if key not in present), None)
    if machine_id is None:
        if memo is not None:
            memo.keep(None, before, seen)
        return None
    return Verdict(
        False,
        f"{name}: machine {machine_id}, seen at {seen[machine_id]} ms, is missing from "
        f"the look at {latest.at_ms} ms; a machine that vanished cannot be shown healthy",
        machine_id,
        layer="machine-missing",
    )
