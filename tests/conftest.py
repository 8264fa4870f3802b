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


#: The parallel pass's longest tests (wall time of one run of `make test`'s parallel pass on 2
#: cores, other load about 1.5): run first, so none is the last thing one worker does while the
#: others sit idle; longest first. A name that no longer matches only loses its place.
LONG_FIRST = (
    "tests/test_lb_real.py::test_short_real_run_loses_requests_as_the_model_does",  # 23 s
    "tests/test_wheel.py::test_the_readme_quickstart_runs_from_the_wheel_as_printed",  # 21 s
    "tests/test_twin_rows.py::test_checks_gives_the_process_a_row_in_every_scenario",  # 8 s
    "tests/test_twin_clients.py::test_deploy_examples_in_the_incident",  # 2 x 5 s
    "tests/test_twin_compare.py::test_healthy_release_every_example_passes",  # 5 s
    "tests/test_compare_pool.py::test_compare_on_two_workers_prints_and_writes_what_one_does",  # 4 s
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of ``SERIAL_MODULES`` ``serial``; move ``LONG_FIRST`` to the front.

    The order is the same in every xdist worker (each collects, and they must agree).
    """
    for item in items:
        if item.path.name in SERIAL_MODULES:
            item.add_marker(pytest.mark.serial)

    def place(item: pytest.Item) -> int:
        return next((i for i, name in enumerate(LONG_FIRST) if item.nodeid.startswith(name)),
                    len(LONG_FIRST))

    items.sort(key=place)  # stable: the rest keep their order
