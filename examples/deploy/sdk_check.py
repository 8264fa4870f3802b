"""A deploy check written with PyPI's fly-python-sdk (0.3.4), as its README shows the calls.

Run by ``testbed compare SCENARIO --check-http "python examples/deploy/sdk_check.py"``: the
platform has published; this lists the app's machines (``App.list_machines``), waits for
each to read started, looks at each machine's events (``Machine.get_events``) twice
LOOK_DELAY_S apart (default 10), and fails if a machine is not started at the second look
or it shows a crash (an exit not asked for, non-zero or OOM-killed) newer than the newest
the first look showed: the timestamp rule. Exit 0: live; 1: failed; 2: an API error.
The SDK reads no environment: each object's ``base_url`` is set to ``FLY_API_HOSTNAME``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from fly_python_sdk.exceptions import FlyError
from fly_python_sdk.fly import Fly


def _newest_crash(events: list) -> float:
    crashes = [e.timestamp.timestamp() for e in events if e.type == "exit" and e.request is not None
               and not e.request.exit_event.get("requested_stop")
               and (e.request.exit_event.get("exit_code") or e.request.exit_event.get("oom_killed"))]
    return max(crashes, default=0.0)


async def main() -> int:
    """The check's verdict as an exit status."""
    base = os.environ["FLY_API_HOSTNAME"]
    delay = float(os.environ.get("LOOK_DELAY_S", "10"))
    app = Fly(os.environ["FLY_API_TOKEN"]).Org().App(os.environ["FLY_APP_NAME"])
    app.base_url = base
    machines = []
    for machine_id in await app.list_machines(ids_only=True):
        machine = app.Machine(machine_id)
        machine.base_url = base
        machines.append(machine)
    deadline = time.monotonic() + 60 * delay / 10
    while any(state != "started" for state in [(await m.inspect()).state for m in machines]):
        if time.monotonic() > deadline:
            print("sdk: a machine did not start (failed)")
            return 1
        await asyncio.sleep(delay / 10)
    first = [_newest_crash(await m.get_events()) for m in machines]
    await asyncio.sleep(delay)
    second = [_newest_crash(await m.get_events()) for m in machines]
    if any(state != "started" for state in [(await m.inspect()).state for m in machines]):
        print("sdk: a machine is not started at the second look (failed)")
        return 1
    if any(after > before for before, after in zip(first, second, strict=True)):
        print("sdk: a crash newer than the first look's (failed)")
        return 1
    print("sdk: no crash newer than the first look's (live)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except FlyError as error:
        print(f"sdk: the API refused a call: {error}", file=sys.stderr)
        sys.exit(2)
