"""PyPI's fly-python-sdk (0.3.4, installed by the Makefile) against the twin: its pydantic
models load every machine and event served (the SDK requires ``image_ref.digest`` and event
``id``s), and a check written with it (examples/deploy/sdk_check.py) judges the incident
caught and a healthy release passed."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fly_python_sdk.fly import Fly

from platform_testbed.sim.config.scenario import load
from platform_testbed.sim.twin.session import open_session
from tests.test_twin_api import RELEASE, TOKEN, Client

ROOT = Path(__file__).resolve().parents[1]


def test_the_sdk_loads_every_machine_and_event_served() -> None:
    """``App.list_machines``, ``Machine.inspect`` and ``Machine.get_events`` parse the twin's
    answers in a crash loop (exits with their ``request.exit_event``) without an error."""
    session = open_session(load("sept25-crash-loop"), 1, speed=20, token=TOKEN)
    try:
        assert Client(session)("POST", "/machines/m1", {"config": {"image": RELEASE}})[0] == 200

        async def read() -> tuple[list, object, list]:
            app = Fly(TOKEN).Org().App(session.app.app)
            app.base_url = session.server.url
            machine = app.Machine("m1")
            machine.base_url = session.server.url
            await asyncio.sleep(0.5)  # 10 s of the crash loop
            return await app.list_machines(), await machine.inspect(), await machine.get_events()

        machines, inspected, events = asyncio.run(read())
    finally:
        session.close(finish=False)
    assert [m.image_ref.digest.startswith("sha256:") for m in machines] == [True]
    assert inspected.config.image == RELEASE
    assert any(e.type == "exit" and e.request is not None for e in events)
    assert all(len(e.id) == 26 for e in events)


@pytest.mark.parametrize(("scenario", "outcome"), [("sept25-crash-loop", "caught"),
                                                   ("healthy-release", "passed")])
def test_a_check_written_with_the_sdk_is_judged(scenario: str, outcome: str) -> None:
    """examples/deploy/sdk_check.py as ``--check-http`` (speed 40, LOOK_DELAY_S=0.25: its 10 s)."""
    command = f"{sys.executable} {ROOT / 'examples' / 'deploy' / 'sdk_check.py'}"
    done = subprocess.run(
        [sys.executable, "-m", "platform_testbed.sim", "compare", scenario, "--check-http", command,
         "--speed", "40", "--json"], capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "LOOK_DELAY_S": "0.25"})
    assert done.returncode == 0, done.stderr
    [row] = [r for run in json.loads(done.stdout)["runs"] for r in run["results"]]
    assert row["outcome"] == outcome, row["reason"]
