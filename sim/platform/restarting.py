"""flyd's restart policy: does a machine whose app exited get restarted?"""

from __future__ import annotations

from collections import deque

from platform_testbed.sim.config.scenario import RestartPolicy


def restarts(
    policy: RestartPolicy, exit_code: int, oom_killed: bool, recent: int, max_retries: int
) -> bool:
    """Does flyd restart a machine whose app just exited (not on request)?

    superfly/docs machines/guides-examples/machine-restart-policy (docs@aa73f3e4):
    ``no`` never restarts; ``always`` restarts "regardless of the exit code"; ``on-failure``
    restarts "if it exits with a non-zero exit code", "up to max_retries (default 10)
    times within a 5-minute window" (``recent`` counts the restarts in that window). An
    OOM kill is a non-zero exit (137): the page does not single it out.
    """
    if policy == "always":
        return True
    if policy == "no":
        return False
    failed = exit_code != 0 or oom_killed
    return failed and recent < max_retries


def recent_restarts(restarted: deque[float], now: float, window: float) -> int:
    """How many of the restart times in ``restarted`` lie within ``window`` before ``now``.

    Drops the older ones; ``window`` 0 counts every restart of the machine's life.
    """
    if window:
        while restarted and restarted[0] <= now - window:
            restarted.popleft()
    return len(restarted)
