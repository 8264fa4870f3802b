"""Each command imports what it uses: ``testbed compare`` loads no rollout, hunt or sweep module."""

from __future__ import annotations

import json
import subprocess
import sys

#: Run in a fresh interpreter, so nothing another test imported counts.
PROBE = '''
import contextlib, io, json, sys
from platform_testbed.sim.cli.parser import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(["compare", "sept25-crash-loop", "--json"])
print(json.dumps({"code": code, "report": json.loads(out.getvalue()),
                  "modules": sorted(m for m in sys.modules if m.startswith("platform_testbed"))}))
'''

#: The packages (and their command modules) that compare has no use for.
UNUSED = ("platform_testbed.sim.rollout", "platform_testbed.sim.hunt", "platform_testbed.sim.sweep",
          "platform_testbed.sim.cli.rollout", "platform_testbed.sim.cli.sweep")


def test_compare_loads_no_rollout_hunt_or_sweep_module() -> None:
    """After compare's handler ran on sept25-crash-loop, sys.modules holds none of them."""
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=120, check=True)
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["code"] == 0
    assert seen["report"]["runs"][0]["results"]  # compare really ran its worlds
    assert "platform_testbed.sim.publish.world" in seen["modules"]
    loaded = [m for m in seen["modules"] if any(m == u or m.startswith(u + ".") for u in UNUSED)]
    assert not loaded, loaded
