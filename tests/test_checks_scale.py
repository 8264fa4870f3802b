"""Check cost at scale: min-healthy-time (and every check) stays linear in machines and looks.

Run as a script to print the figures: ``python tests/test_checks_scale.py``.
"""

from __future__ import annotations

import sys
import time

from checks import BUILTIN_CHECKS, Event, Look, MachineSnapshot, Verdict, make_check

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


def test_min_healthy_time_is_linear_in_machines() -> None:
    """Three times the machines costs well under nine times the time (superlinear would)."""
    small = drive_seconds("min-healthy-time", healthy_looks(300, 15))
    large = drive_seconds("min-healthy-time", healthy_looks(900, 15))
    assert large < 6 * max(small, 0.01)


if __name__ == "__main__":
    names = sys.argv[1:] or list(BUILTIN_CHECKS)
    for machines in (1_000, 3_000):
        looks = healthy_looks(machines, 15)
        for name in names:
            print(f"{name}: {machines} machines x 15 looks: {drive_seconds(name, looks):.2f} s")
