"""The check this example project ships: fail on any crash since the publish, at one late look.

A check is any object with a ``name`` and ``next(publish_started_ms, looks)``; the testbed
builds this class with the scenario's [check] options it declares (``settle_s``).
"""

from dataclasses import dataclass

from platform_testbed.checks import Verdict, Wait


@dataclass(frozen=True)
class AnyCrash:
    """Look once, ``settle_s`` after the publish: pass only if no machine crashed since it began."""

    settle_s: float = 15.0
    name = "any-crash"

    def next(self, publish_started_ms, looks):
        if not looks:
            return Wait(self.settle_s)
        for machine in looks[-1].machines:
            if any(machine.crashes_since(publish_started_ms)) or machine.state != "started":
                return Verdict(False, f"machine {machine.id} crashed or is down", machine.id)
        return Verdict(True, "no crash since the publish began")
