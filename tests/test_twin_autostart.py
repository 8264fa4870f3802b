"""The twin's publish wakes a machine it leaves asleep, as the world's publish does.

In sleeping-api-flyctl the publish updates a stopped machine without starting it
(``start_stopped = false``) and fly-proxy starts it at the next request (``[traffic]
autostart``): ``sim.publish.world.after_roll``. The twin's own publish (``--check-http``)
and a client's update run the same step, so the served world crash-loops as compare's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from platform_testbed.sim.checkload.loader import load_checks
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config.scenario import load
from platform_testbed.sim.publish.world import run
from platform_testbed.sim.twin.session import open_session

DEPLOY = Path(__file__).parent.parent / "examples" / "deploy"


class _Stopped:
    """A clock that never moves: the world runs only to the publish, then instantly on close."""

    def __call__(self) -> float:
        return 0.0


def _events(events: object) -> list[tuple[str, str, int]]:
    return [(e.type, e.status, e.timestamp) for e in events]  # type: ignore[attr-defined]


def test_twin_publish_wakes_the_sleeping_machine_as_the_world_does() -> None:
    """Served with the testbed publishing and no client, the machine's events are those of
    compare's world (under flyctl-smoke, which passes at once and never rolls back), event
    for event, to the last one that world has; an unwoken machine would stop at the update."""
    scenario = load("sleeping-api-flyctl")
    [smoke] = load_checks(["flyctl-smoke"], scenario.check)
    simulated = run(scenario, scenario.seed, smoke, trace=True)
    assert simulated.trace is not None
    expected = _events(simulated.trace.machines[0].events)
    session = open_session(scenario, scenario.seed, testbed_publishes=True, clock=_Stopped())
    session.close(finish=True)
    served = _events(session.app.world.machines[0].all_events or ())
    # The world's reconciler fails the live release at +150 s and fly-proxy stops waking
    # the machine; nobody concludes the served world, so it goes on: compare the prefix.
    assert len(expected) > 20
    assert served[:len(expected)] == expected
    assert [t for t, _, _ in expected[3:6]] == ["update", "start", "exit"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")
def test_check_http_sees_the_crash_loop_autostart_starts(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The timestamp script beside the built-in timestamp check in sleeping-api-flyctl: both
    caught, and the script's looks saw the release crash after the publish (a machine left
    stopped would show no exit at all after its update: the script would catch it only
    for not being started)."""
    monkeypatch.setenv("LOOK_DELAY_S", "0.5")
    assert main(["compare", "sleeping-api-flyctl", "--check", "timestamp", "--check-http",
                 str(DEPLOY / "check-timestamp.sh"), "--speed", "20", "--json"]) == 0
    [run_] = json.loads(capsys.readouterr().out)["runs"]
    rows = {r["check"]: r for r in run_["results"]}
    assert rows["timestamp"]["outcome"] == rows["http-check-timestamp"]["outcome"] == "caught"
    crashes = {e["at_s"] for look in rows["http-check-timestamp"]["looks"]
               for m in look["machines"] for e in m["events"]
               if e["type"] == "exit" and e["exit_code"] != 0 and e["at_s"] >= 0}
    assert len(crashes) >= 2, rows["http-check-timestamp"]["looks"]
