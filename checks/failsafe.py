"""The rule every check applies first: a look that lost machines is never a pass."""

from __future__ import annotations

from collections.abc import Sequence

from checks.model import Look, Verdict


def lost_machines(name: str, looks: Sequence[Look]) -> Verdict | None:
    """A failing verdict if the newest look is empty or lacks a machine an earlier look had.

    A check that judges "every machine" would pass vacuously on a look with no machines,
    and a machine that vanished from the API's answer cannot be shown healthy: either
    way the gate cannot see what it approves, so it fails safe and says why. Linear in
    the snapshots seen, so a driver calling it at every look stays quadratic at worst
    in the number of looks only.
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
    present = {m.id for m in latest.machines}
    for look in looks[:-1]:
        for machine in look.machines:
            if machine.id not in present:
                return Verdict(
                    False,
                    f"{name}: machine {machine.id}, seen at {look.at_ms} ms, is missing from "
                    f"the look at {latest.at_ms} ms; a machine that vanished cannot be shown "
                    "healthy",
                    machine.id,
                    layer="machine-missing",
                )
    return None
