"""``testbed serve``: the scenario's world behind Fly's Machines API until Ctrl-C or its horizon.

Prints the base URL and the variables a deploy step exports, serves, then reports what
the world did, the ground truth and every request. With ``--json`` the report is the one
object on stdout and the start-up lines go to stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
from pathlib import Path
from typing import Any

from platform_testbed.sim.config.options import option
from platform_testbed.sim.config.scenario import BadInput, load
from platform_testbed.sim.config.settings import first_seed
from platform_testbed.sim.runtime.outputs import check_output, write_atomic
from platform_testbed.sim.runtime.signals import ending_on_signals
from platform_testbed.sim.twin.session import open_session

__all__ = ["MAX_SPEED", "serve_command"]

#: The generous cap is for typos; a faster world answers a client's waits in microseconds.
MAX_SPEED = float(option("speed").most or 0)  # the registry's


def _validated(args: argparse.Namespace) -> None:
    """Every option's rule, checked before the world is built (exit 2, one line)."""
    if not (math.isfinite(args.speed) and 0 < args.speed <= MAX_SPEED):
        raise BadInput(f"--speed: must be more than 0 and at most {MAX_SPEED:g} (got {args.speed})")
    if not 0 <= args.port <= 65_535:
        raise BadInput(f"--port: must be 0 (any free port) to 65535 (got {args.port})")
    if args.horizon_s is not None and not (math.isfinite(args.horizon_s) and 0 < args.horizon_s <= 1e6):
        raise BadInput(f"--horizon-s: must be more than 0 and at most 1e6 (got {args.horizon_s})")
    if args.token is not None and (not args.token.strip() or any(c.isspace() for c in args.token)):
        raise BadInput("--token: must be non-empty with no spaces (it goes in an Authorization header)")


def _text(report: dict[str, Any]) -> str:
    start = report["publish_at_ms"]

    def at(ms: int) -> str:
        return f"{(ms - start) / 1000:+9.3f} s"

    lines = [
        f"world: {report['scenario']} seed {report['seed']}, speed {report['speed']:g}, "
        f"{'horizon reached' if report['reached_horizon'] else 'stopped, rest of the horizon run instantly'}",
        f"ground truth: the release {report['release_image']} is "
        f"{'BAD' if report['ground_truth']['bad'] else 'good'} ({report['ground_truth']['rule']})",
        f"the client left running: {report['left_running']} -> outcome {report['outcome']}"
        f" (the release crashed in this run: {'yes' if report['release_crashed_in_this_run'] else 'no'})",
        "machines (times from the publish):",
    ]
    for machine in report["machines"]:
        lines.append(f"  {machine['id']}: {machine['state']}, image {machine['image']}, "
                     f"{machine['crashes']} crash(es), {machine['release_crashes']} of the release; "
                     f"{len(machine['events'])} event(s), newest first:")
        shown = machine["events"][:12]
        lines += [f"    {at(e['timestamp'])}  {e['type']}/{e['status']}"
                  + (f" exit_code={e['exit_code']}" if "exit_code" in e else "") for e in shown]
        if len(machine["events"]) > len(shown):
            lines.append(f"    ... {len(machine['events']) - len(shown)} older")
    lines.append(f"requests ({len(report['requests'])}):")
    lines += [f"  {at(r['at_ms'])}  {r['status']}  {r['method']} {r['path']}" for r in report["requests"]]
    return "\n".join(lines)


def serve_command(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C, SIGTERM or the horizon; then report (and record). Exit 0."""
    _validated(args)
    scenario = load(args.scenario, args.sets)
    seed = first_seed(scenario.seed if args.seed is None else args.seed)
    horizon_s, field = ((scenario.horizon_s, "horizon_s") if args.horizon_s is None
                        else (args.horizon_s, "--horizon-s"))
    if horizon_s <= scenario.publish.at_s:
        # The world would end before there is a release to deploy: nothing to serve.
        raise BadInput(f"{field}: must be after the publish at {scenario.publish.at_s:g} s "
                       f"(got {horizon_s:g})")
    record = check_output("--record", Path(args.record), args.force) if args.record else None
    try:
        session = open_session(scenario, seed, speed=args.speed, token=args.token,
                               port=args.port, horizon_s=args.horizon_s)
    except OSError as error:  # the port taken, most often: nothing started yet
        raise BadInput(f"--port: cannot listen on 127.0.0.1:{args.port} "
                       f"({error.strerror or error})") from None
    out = sys.stderr if args.json else sys.stdout
    stop = threading.Event()
    # From here to the report, Ctrl-C and SIGTERM end the serve (the normal end) and a
    # second one does not cut the report short (ending_on_signals).
    with ending_on_signals(stop):
        print(f"serving {scenario.name} (seed {seed}) on {session.server.url}/v1 "
              f"at speed {args.speed:g}; Ctrl-C to stop", file=out)
        for line in session.env_lines:
            print(line, file=out)
        out.flush()
        try:
            while not (session.driver.ended.wait(0.25) or stop.is_set()):
                pass
        finally:
            session.close()
        report = session.report()
        if record is not None and (lines := session.recording_lines()):
            write_atomic(record, lambda f: f.writelines(line + "\n" for line in lines))
        elif record is not None:
            # An empty file would replace a recording and then fail every replay of it.
            print(f"--record: no request read the machines, so nothing was recorded "
                  f"({record} left as it was)", file=sys.stderr)
        print(json.dumps(report) if args.json else _text(report))
    return 0
