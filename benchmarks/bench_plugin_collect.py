"""What the pytest plugin costs a suite that never uses it: collecting 200 trivial tests.

Run: ``.venv/bin/python benchmarks/bench_plugin_collect.py [--pairs N] [SOURCE_ROOT]``
(default: this checkout). Writes 200 trivial
tests into a temporary folder and times ``pytest --collect-only -q`` there, with the plugin
(installed: the ``pytest11`` entry point) and with ``-p no:testbed``, in interleaved pairs
(default 12, after one warm-up pair), in fresh processes with this checkout first on the
path. Prints each median and the median of the pairs' ratios (with / without): the goal is
within 5 % (issue 31). Record ``uptime``'s load average beside the figure.
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


def _collect(folder: Path, off: bool, root: Path = ROOT) -> float:
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    env = {**os.environ, "PYTHONPATH": str(root)}
    began = time.perf_counter()
    done = subprocess.run([*argv, *(["-p", "no:testbed"] if off else [])], cwd=folder, env=env,
                          capture_output=True, text=True, check=False)
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(done.stdout + done.stderr)
    return took


def main() -> None:
    """Time the pairs and print the medians and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("root", nargs="?", type=Path, default=ROOT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "test_trivial.py").write_text(
            "".join(f"def test_{i}():\n    assert {i} == {i}\n\n" for i in range(200)))
        _collect(folder, False, args.root), _collect(folder, True, args.root)  # warm the cache
        on, off, ratios = [], [], []
        for i in range(args.pairs):
            # Alternate which goes first, so a drift in the machine's load falls on both.
            first_off = i % 2 == 1
            a = _collect(folder, first_off, args.root)
            b = _collect(folder, not first_off, args.root)
            with_s, without_s = (b, a) if first_off else (a, b)
            on.append(with_s)
            off.append(without_s)
            ratios.append(with_s / without_s)
    print(f"plugin on:  median {statistics.median(on):.3f} s")
    print(f"plugin off: median {statistics.median(off):.3f} s (-p no:testbed)")
    print(f"with / without: median of {args.pairs} pairs {statistics.median(ratios):.3f}")
    print(f"load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()
