"""A user check in a dozen lines: fail on any crash since the publish, seen at one late look.

    testbed compare sept25-crash-loop --check scenarios/user_check.py:AnyCrashCheck
    testbed compare sept25-crash-loop --check scenarios/user_check.py:AnyCrashCheck \\
        --check-opt settle_s=30

Any object with a ``name`` and ``next(publish_started_ms, looks)`` is a check; a class
is built with the scenario's [check] options it accepts plus ``--check-opt`` values.
"""

from dataclasses import dataclass

from platform_testbed.checks import Verdict, Wait


@dataclass(frozen=True)
class AnyCrashCheck:
    """Look once, ``settle_s`` after the publish: pass only if no crash since it began."""

    settle_s: float = 15.0
    name = "any-crash"

    def next(self, publish_started_ms, looks):
        if not looks:
            return Wait(self.settle_s)
        for machine in looks[-1].machines:
            if any(machine.crashes_since(publish_started_ms)) or machine.state != "started":
                return Verdict(False, f"machine {machine.id} crashed or is down", machine.id)
        return Verdict(True, "no crash since the publish began")
