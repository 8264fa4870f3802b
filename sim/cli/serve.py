"""``testbed serve``: the scenario's world behind Fly's Machines API until Ctrl-C or its horizon.

Prints the base URL and the variables a deploy step exports, serves, then reports what
the world did, the ground truth and every request. With ``--json`` the report is the one
object on stdout and the start-up lines go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import resource
import shlex
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from platform_testbed.sim.config.options import option
from platform_testbed.sim.config.scenario import BadInput, load
from platform_testbed.sim.config.settings import first_seed
from platform_testbed.sim.runtime.outputs import check_output, emit, write_atomic, writing
from platform_testbed.sim.runtime.signals import ending_on_signals
from platform_testbed.sim.show.text import printable
from platform_testbed.sim.twin.session import open_session

__all__ = ["MAX_SPEED", "serve_command"]

#: The generous cap is for typos; a faster world answers a client's waits in microseconds.
MAX_SPEED = float(option("speed").most or 0)  # the registry's
#: What an Authorization header carries as it is (RFC 9110 field value, visible ASCII) and
#: any client sends the same bytes for: a token of other characters could never match.
_TOKEN = re.compile(r"[\x21-\x7e]{1,4096}")


def _validated(args: argparse.Namespace) -> None:
    """Every option's rule, checked before the world is built (exit 2, one line)."""
    if not (math.isfinite(args.speed) and 0 < args.speed <= MAX_SPEED):
        raise BadInput(f"--speed: must be more than 0 and at most {MAX_SPEED:g} (got {args.speed})")
    if not 0 <= args.port <= 65_535:
        raise BadInput(f"--port: must be 0 (any free port) to 65535 (got {args.port})")
    if args.horizon_s is not None and not (math.isfinite(args.horizon_s) and 0 < args.horizon_s <= 1e6):
        raise BadInput(f"--horizon-s: must be more than 0 and at most 1e6 (got {args.horizon_s})")
    if args.token is not None and not _TOKEN.fullmatch(args.token):
        raise BadInput("--token: must be 1 to 4096 visible ASCII characters, no spaces "
                       "(it goes in an Authorization header)")


def export_line(name: str, value: str) -> str:
    """``export NAME=VALUE`` for a shell to source: quoted, and printable on a terminal.

    ``shlex.quote`` keeps ``;`` and ``$(...)`` from running; a value with a character a
    terminal must not get raw (ESC, C1, bidi, U+2028...) is written in bash's ``$'...'``
    with each such character escaped, which sources to the same value.
    """
    if value.isprintable() and printable(value) == value:
        return f"export {name}={shlex.quote(value)}"
    escaped = "".join(c if c.isprintable() and c not in "\\'" and printable(c) == c
                      else _ansi_c(c) for c in value)
    return f"export {name}=$'{escaped}'"


def _ansi_c(char: str) -> str:
    if char in "\\'":
        return "\\" + char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _more_descriptors() -> None:
    """The soft descriptor limit raised to the hard one (at most 65,536): a connection each.

    The server's caps on connections and held waits follow it (``process_limits``).
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 65_536 if hard == resource.RLIM_INFINITY else min(hard, 65_536)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def _exports(environment: Mapping[str, str]) -> list[str]:
    return [export_line(name, value) for name, value in environment.items()]


def _text(report: dict[str, Any]) -> str:
    start = report["publish_at_ms"]

    def at(ms: int) -> str:
        return f"{(ms - start) / 1000:+9.3f} s"

    lines = [
        f"world: {printable(report['scenario'])} seed {report['seed']}, speed {report['speed']:g}, "
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
    lines += [f"  {at(r['at_ms'])}  {r['status']}  {printable(r['method'])} {printable(r['path'])}"
              for r in report["requests"]]
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
    out = sys.stderr if args.json else sys.stdout
    if sys.__stdout__ is None or (args.json and sys.__stderr__ is None):
        raise BadInput("stdout: is closed; the base URL, the report and --json go there")
    _more_descriptors()
    try:
        session = open_session(scenario, seed, speed=args.speed, token=args.token,
                               port=args.port, horizon_s=args.horizon_s)
    except OSError as error:  # the port taken, most often: nothing started yet
        raise BadInput(f"--port: cannot listen on 127.0.0.1:{args.port} "
                       f"({error.strerror or error})") from None
    stop = threading.Event()
    # From here to the report, Ctrl-C and SIGTERM end the serve (the normal end) and a
    # second one does not cut the report short (ending_on_signals).
    with ending_on_signals(stop):
        try:
            emit("\n".join([
                f"serving {printable(scenario.name)} (seed {seed}) on {session.server.url}/v1 "
                f"at speed {args.speed:g}; Ctrl-C to stop", *_exports(session.environment())]),
                stream=out)
            while not (session.driver.ended.wait(0.25) or stop.is_set()):
                pass
        finally:
            session.close()
        report = session.report()
        if record is not None and (lines := session.recording_lines()):
            with writing(f"--record {record}"):
                write_atomic(record, lambda f: f.writelines(line + "\n" for line in lines))
        elif record is not None:
            # An empty file would replace a recording and then fail every replay of it.
            print(f"--record: no request read the machines, so nothing was recorded "
                  f"({record} left as it was)", file=sys.stderr)
        text = json.dumps(report) if args.json else _text(report)
        emit(text)
    return 0
