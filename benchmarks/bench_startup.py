"""How long ``testbed`` takes to start: a shell's Tab, ``--help`` and ``--version``.

Run: ``.venv/bin/python benchmarks/bench_startup.py [SOURCE_ROOT]`` (default: this
checkout). Each case runs ``python -m platform_testbed`` in a fresh process, as a shell would, once to
warm the file cache and then ``--runs`` times (default 10); it prints the median and the
fastest wall time of each, and the median over that of a bare ``python -c pass`` (the
interpreter's own start, which no change here can remove). A Tab is argcomplete's
request (``_ARGCOMPLETE=1``, as tests/test_completion.py makes it) for ``testbed compare
sept<TAB>``, the completion that reads the shipped scenario names. The goals: a Tab
under 0.15 s, ``--help`` and ``--version`` under 0.2 s on the development machine; these
are wall times of this machine, for comparing two trees here, not a timed test.

``python -X importtime -m sim --version 2>&1 | sort -t'|' -k2 -n | tail`` says where the
time goes when a case is slow.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cases(answer: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Name -> (arguments after ``python -m platform_testbed``, extra environment)."""
    line = "testbed compare sept"
    tab = {"_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
           "COMP_POINT": str(len(line)), "_ARGCOMPLETE_STDOUT_FILENAME": str(answer)}
    return {"python -c pass": ([], {}), "tab (compare sept<TAB>)": ([], tab), "--help": (["--help"], {}),
            "--version": (["--version"], {})}


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Wall seconds of one ``python -m platform_testbed ARGV`` run (it must exit 0); ``python -c pass``
    for no ARGV and no completion request."""
    command = ["-m", "platform_testbed", *argv] if argv or "_ARGCOMPLETE" in env else ["-c", "pass"]
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *command], env=env, cwd=cwd,
                          capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def main() -> None:
    """Print the median and best start time of each case."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", type=Path, default=ROOT,
                        help="the source tree to time (its sim/ is imported)")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    root = args.root.resolve()
    with tempfile.TemporaryDirectory() as work:
        cwd = Path(work)
        base = {**os.environ, "PYTHONPATH": str(root),
                "TESTBED_SCENARIOS": str(root / "scenarios")}
        print(f"{root}: median and best of {args.runs} runs")
        bare = 0.0
        for name, (argv, extra) in cases(cwd / "candidates").items():
            env = base | extra
            timed(argv, env, cwd)  # warm the file cache
            times = [timed(argv, env, cwd) for _ in range(args.runs)]
            median = statistics.median(times)
            bare = bare or median
            print(f"  {name:<24} median {median:.3f} s  best {min(times):.3f} s  "
                  f"{median / bare:.1f}x the bare interpreter")


if __name__ == "__main__":
    main()
