"""A property-based fuzzer of the readers and the command line (issue 12, item 6).

Hypothesis writes scenario, rollout and sweep documents (real keys, hostile values: inf,
NaN, huge, negative, wrong types, nested tables), recordings (any JSON, one look per
line), and argument lists over the CLI's surface. The property, for every one: the
command ends with exit 0, 1 or 2 -- never a traceback (an exception escaping ``main``),
never past ``BOUND_S``; exit 2 is one line on stderr.

The values are drawn from an edge set, not from the whole number line: a valid but huge
world (100,000 machines) is slow by design and is not what this fuzzer looks for.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from platform_testbed.sim.cli.parser import main

BOUND_S = 10.0

EDGE_NUMBERS = [0, -1, 1, 2, 3, 0.5, 1e-9, 1e300, -1e300, 2**63, math.inf, -math.inf, math.nan]
SCALARS = st.one_of(
    st.sampled_from(EDGE_NUMBERS),
    st.booleans(),
    st.sampled_from(["", "x", "healthy", "crash_after", "restore", "per-server", "é", "\x00"]),
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3), max_leaves=5)

SCENARIO_KEYS = {
    "": ["name", "seed", "horizon_s", "description", "bogus"],
    "platform": ["event_log_cap", "restart_policy", "max_retries", "retry_window_s",
                 "restart_delay_s", "boot_s", "jitter", "epoch_ms", "events"],
    "release": ["behavior", "crash_after_s", "crash_on_boot_s", "machines", "exit_code",
                "flaky_interval_s", "crash_probability"],
    "check": ["look_delay_s", "start_timeout_s", "poll_s"],
    "publish": ["at_s", "rollback", "start_stopped"],
    "traffic": ["rps", "autostart"],
}
ROLLOUT_KEYS = {
    "": ["name", "seed", "settle_s"],
    "fleet": ["servers"],
    "balancer": ["interval_s", "unhealthy_threshold", "healthy_threshold"],
    "deploy": ["at_s", "shutdown_s", "healthy_timeout_s", "start_min_s", "start_max_s"],
    "watchdog": ["interval_s", "consecutive_failures", "repair_s"],
    "traffic": ["rps"],
}


def toml_value(value: Any) -> str:
    """A value as TOML: floats' inf and nan as TOML spells them, strings JSON-quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


@st.composite
def documents(draw: st.DrawFn, keys: dict[str, list[str]]) -> str:
    """A TOML document over ``keys`` with hostile values (or, sometimes, broken TOML)."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.text(max_size=40))
    lines: list[str] = []
    tables = draw(st.lists(st.sampled_from(sorted(keys)), unique=True, max_size=4))
    for table in sorted(tables, key=lambda t: t != ""):  # top-level keys first
        if table:
            lines.append(f"[{table}]")
        for key in draw(st.lists(st.sampled_from(keys[table]), unique=True, max_size=3)):
            lines.append(f"{key} = {toml_value(draw(VALUES))}")
    return "\n".join(lines) + "\n"


@contextmanager
def folder() -> Iterator[Path]:
    """A fresh working folder per example (hypothesis reruns a test body many times)."""
    before = Path.cwd()
    with tempfile.TemporaryDirectory() as name:
        os.chdir(name)
        try:
            yield Path(name)
        finally:
            os.chdir(before)


def run(argv: list[str]) -> tuple[int, str]:
    """main(argv) in this process: its exit status and stderr; a traceback fails the test."""
    err = StringIO()
    started = time.monotonic()
    with redirect_stdout(StringIO()), redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exiting:  # argparse: usage errors end in SystemExit(2)
            code = exiting.code if isinstance(exiting.code, int) else 2
    elapsed = time.monotonic() - started
    assert elapsed < BOUND_S, f"{argv} took {elapsed:.1f} s"
    assert code in (0, 1, 2), f"{argv} exited {code}: {err.getvalue()!r}"
    if code == 2:
        assert len(err.getvalue().strip().splitlines()) == 1, err.getvalue()
    return code, err.getvalue()


FUZZ = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)


@FUZZ
@given(documents(SCENARIO_KEYS))
def test_scenario_documents(text: str) -> None:
    """compare reads any scenario document without a traceback."""
    with folder():
        Path("s.toml").write_text(text, encoding="utf-8", errors="surrogatepass")
        run(["compare", "s.toml", "--check", "count", "--check", "timestamp", "--json"])


@FUZZ
@given(documents(ROLLOUT_KEYS))
def test_rollout_documents(text: str) -> None:
    """lint-timing and rollout read any rollout document without a traceback."""
    with folder():
        Path("r.toml").write_text(text, encoding="utf-8", errors="surrogatepass")
        run(["lint-timing", "r.toml"])
        run(["rollout", "r.toml", "--json"])


AXES = st.one_of(
    st.lists(SCALARS, max_size=3),
    st.fixed_dictionaries({"start": SCALARS, "stop": SCALARS, "step": SCALARS}),
    st.fixed_dictionaries({"random": st.sampled_from(["uniform", "integers", "loguniform"]),
                           "low": SCALARS, "high": SCALARS, "count": SCALARS}),
)


def _axis_toml(axis: Any) -> str:
    if isinstance(axis, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in axis.items()) + " }"
    return toml_value(axis)


@FUZZ
@given(st.dictionaries(st.sampled_from(["release.crash_after_s", "check.look_delay_s",
                                        "platform.event_log_cap", "bogus.key", "a.b.c"]),
                       AXES, max_size=2),
       st.sampled_from([*EDGE_NUMBERS, "x"]))
def test_sweep_documents(axes: dict[str, Any], seeds: Any) -> None:
    """sweep reads any sweep document without a traceback (one worker, thinned by limits)."""
    lines = ['scenario = "sept25-crash-loop"', 'checks = ["count"]',
             f"seeds = {toml_value(seeds)}", "[axes]"]
    lines += [f'"{key}" = {_axis_toml(axis)}' for key, axis in axes.items()]
    with folder():
        Path("w.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        # A valid sweep of many worlds is slow by design: keep the fuzzed ones small.
        os.environ["TESTBED_MAX_SWEEP_POINTS"] = "20"
        try:
            run(["sweep", "w.toml", "--workers", "1", "--no-progress", "--json"])
        finally:
            del os.environ["TESTBED_MAX_SWEEP_POINTS"]


JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
              st.text(max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(
                                ["machines", "at_ms", "publish_started_ms", "id", "state",
                                 "events", "type", "status", "timestamp", "run", "x"]),
                                inner, max_size=4)),
    max_leaves=12,
)


@FUZZ
@given(st.lists(JSON, min_size=0, max_size=3), st.booleans())
def test_recordings(lines: list[Any], one_payload: bool) -> None:
    """replay reads any JSON (lines, or one payload) without a traceback."""
    text = json.dumps(lines[0]) if one_payload and lines else "\n".join(map(json.dumps, lines))
    with folder():
        Path("r.jsonl").write_text(text, encoding="utf-8")
        run(["replay", "r.jsonl", "--check", "count", "--json"])


OPTION_VALUES = st.sampled_from(["0", "-1", "1", "2", "1e9", "nan", "inf", "x", "", "1000000000",
                                 "out.csv", "nope/x.csv", ".", "/dev/null", "a=b",
                                 "release.crash_after_s=inf", "check.poll_s=0.5", "seed=3"])
COMMANDS = {
    "compare": (["sept25-crash-loop", "healthy-release", "nope", "x.toml"],
                ["--seed", "--runs", "--set", "--check", "--check-opt", "--record",
                 "--timeline", "--details", "--check-timeout", "--max-looks"],
                ["--json", "--summary", "--force", "--debug"]),
    "rollout": (["original", "fixed", "nope"], ["--seed", "--runs", "--set"], ["--json"]),
    "lint-timing": (["original", "nope", "x.toml"], [], ["--json"]),
    "replay": (["r.jsonl", "nope.jsonl", "."], ["--at-ms", "--publish-ms", "--check",
                                                "--check-opt", "--max-looks"], ["--json"]),
    "list": ([], [], ["--profiles", "--json"]),
}


@st.composite
def argument_lists(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(COMMANDS)))
    positionals, options, flags = COMMANDS[command]
    argv = [command]
    if positionals:
        argv.append(draw(st.sampled_from(positionals)))
    for _ in range(draw(st.integers(0, 3))):
        if options and draw(st.booleans()):
            argv += [draw(st.sampled_from(options)), draw(OPTION_VALUES)]
        elif flags:
            argv.append(draw(st.sampled_from(flags)))
    if command == "compare" and "--runs" in argv:
        # Valid run counts are bounded by the fuzz, not by the limit (a million is valid).
        i = argv.index("--runs")
        if argv[i + 1] in ("1000000000", "1e9"):
            pass
        elif argv[i + 1] not in ("0", "-1", "x", "", "nan", "inf"):
            argv[i + 1] = "2"
    if command == "rollout" and "--runs" in argv:
        i = argv.index("--runs")
        if argv[i + 1] not in ("0", "-1", "x", "", "nan", "inf", "1000000000", "1e9"):
            argv[i + 1] = "2"
    return argv


@FUZZ
@given(argument_lists())
def test_argument_lists(argv: list[str]) -> None:
    """Any argument list over the CLI's surface ends in 0, 1 or 2, one line for 2."""
    with folder() as here:
        (here / "r.jsonl").write_text("")
        run(argv)
