"""The test kit: looks and event histories by hand, a pure driver, hypothesis strategies.

Its names load on first use (``from platform_testbed.sim.kit import World``), so importing
the package (pytest does, for the plugin) costs nothing of the model.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each name the kit offers at its top, and the module that defines it.
_WHERE = {
    "App": "testing", "Run": "testing", "World": "testing", "drive_world": "testing",
    "world": "testing", "incident_looks": "testing",
    "GuaranteeBroken": "strategies", "apps": "strategies", "assert_guarantee": "strategies",
    "never_false_alarms": "strategies", "never_misses": "strategies",
    "always_decides": "strategies", "worlds": "strategies",
}
__all__ = ["GuaranteeBroken", "App", "Run", "World", "always_decides", "apps", "assert_guarantee",  # noqa: RUF022 -- by module
           "drive_world", "incident_looks", "never_false_alarms", "never_misses", "world", "worlds"]


def __getattr__(name: str) -> Any:
    """``World`` and the rest, imported from their module when first asked for."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
