"""Check cost at scale: every memoised check stays linear in machines (and, in
tests/test_checks_exact_memo.py, in looks), counted in snapshots visited.

Run as a script to print wall-clock figures: ``python -m tests.test_checks_scale``.
"""

from __future__ import annotations

import sys
import time

from platform_testbed.checks import BUILTIN_CHECKS, Event, Look, MachineSnapshot, Verdict, make_check
from tests.test_checks_exact_memo import STILL_WAITING, visits_per_call, waiting_looks

PUBLISH_MS = 1_000_000


def healthy_looks(machines: int, looks: int) -> list[Look]:
    """Looks one second apart at machines that restarted at the publish and stay up."""
    events = (
        Event("start", "started", PUBLISH_MS + 500),
        Event("update", "replaced", PUBLISH_MS, "user"),
        Event("launch", "created", PUBLISH_MS - 60_000, "user"),
    )
    return [
        Look(
            PUBLISH_MS + 1_000 * k,
            tuple(
                MachineSnapshot(f"m{i}", "started", "app", events, PUBLISH_MS + 1_000 * k)
                for i in range(machines)
            ),
        )
        for k in range(looks)
    ]


def drive_seconds(name: str, looks: list[Look]) -> float:
    """Wall-clock seconds to ask the check once per look prefix, as a driver does."""
    check = make_check(name, {})
    began = time.perf_counter()
    for n in range(1, len(looks) + 1):
        if isinstance(check.next(PUBLISH_MS, looks[:n]), Verdict):
            break
    return time.perf_counter() - began


def test_every_check_is_linear_in_machines() -> None:
    """Three times the machines: each check visits at most three times the snapshots over a
    drive (counted, not timed: a timed bound flaked under a loaded CI machine)."""
    for name, options, state, start_ms in STILL_WAITING:
        small = sum(visits_per_call(name, options, waiting_looks(10, 12, state, start_ms)))
        large = sum(visits_per_call(name, options, waiting_looks(30, 12, state, start_ms)))
        assert small < large <= 3 * small, (name, small, large)


if __name__ == "__main__":
    names = sys.argv[1:] or list(BUILTIN_CHECKS)
    for machines in (1_000, 3_000):
        looks = healthy_looks(machines, 15)
        for name in names:
            print(f"{name}: {machines} machines x 15 looks: {drive_seconds(name, looks):.2f} s")
