"""``compare --json`` shows each look as the check saw it, ``pre_deploy`` included.

A check such as flyctl-smoke reads ``Look.pre_deploy`` (each machine's state before the
publish) to decide whether it starts a machine; a JSON document that dropped it would not
let anyone see why the check decided as it did. The oracle here is the run's own trace:
each machine's last state change before the publish instant (a machine still ``created``
then is absent, as the simulator leaves it out).
"""

from __future__ import annotations

import json

import pytest

from platform_testbed.checks import make_check
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config import scenario as scenarios
from platform_testbed.sim.publish.world import run


def _states_before_publish(name: str, seed: int) -> dict[str, str]:
    sc = scenarios.load(name)
    result = run(sc, seed, make_check("timestamp", sc.check.model_dump()), trace=True)
    assert result.trace is not None
    before = {}
    for machine in result.trace.machines:
        changes = [state for at, state in machine.states if at < result.trace.publish_at_s]
        if changes and changes[-1] != "created":
            before[machine.id] = changes[-1]
    return before


@pytest.mark.parametrize("name", ["sept25-crash-loop", "healthy-release"])
def test_every_look_in_compare_json_carries_the_states_before_the_publish(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", name, "--seed", "3", "--check", "timestamp", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    looks = doc["runs"][0]["results"][0]["looks"]
    assert looks, "the check looked at least once"
    expected = _states_before_publish(name, 3)
    assert expected, "the previous release ran before the publish"
    assert [look["pre_deploy"] for look in looks] == [expected] * len(looks)
