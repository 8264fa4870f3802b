"""Hypothesis profiles: ``ci`` keeps the suite fast on 2 cores; ``dev`` digs deeper."""

import os

import pytest
from hypothesis import HealthCheck, settings

from platform_testbed.sim.show.table import DEFAULT_WIDTH

settings.register_profile("ci", max_examples=60, deadline=None, print_blob=True)
settings.register_profile(
    "dev", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(autouse=True)
def _fixed_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables are drawn at COLUMNS: pin it, so goldens match whatever terminal runs the tests."""
    monkeypatch.setenv("COLUMNS", str(DEFAULT_WIDTH))


#: Modules that signal process groups (a pooled sweep's tree, a hunt mid-search) and bound how
#: long the tree takes to end: beside a parallel pass their clocks stretch with its load, so
#: `make test` runs them alone, after it (pytest -m serial). Named here, in one place.
SERIAL_MODULES = frozenset({"test_signals_pool.py", "test_hunt_signals.py"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of ``SERIAL_MODULES`` ``serial``."""
    for item in items:
        if item.path.name in SERIAL_MODULES:
            item.add_marker(pytest.mark.serial)
