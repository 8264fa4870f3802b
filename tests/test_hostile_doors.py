"""Hostile input at every door: the corpus of issue 20, rebuilt from its text.

The classes the issue names: limits from the environment, the Python API's arguments,
text that breaks output (surrogates, control characters, separators, ASCII-only
terminals), things that were silently wrong (reserved axis names, booleans as numbers,
duplicate machine ids, huge timeouts, hunt's output folder and seed), loops without a
floor (interval floors, rollout work estimates, the check protocol's incremental mode,
Dask addresses), and processes (a check command's orphaned grandchild). Each command-line
case runs ``testbed`` in this process with the contract of
``tests/test_hostile.py`` (exit 0/1/2 as stated, no traceback, one line for exit 2, within
its time bound) and leaves no child process behind; each API case returns or raises
``BadInput`` (one line), nothing else. ``test_corpus_counts`` prints how each class ends.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from platform_testbed.sim import api
from tests.procs import pool_servers, processes
from tests.test_hostile import SCENARIO, TIME_BOUND_S, Case, _run

#: Reasons a ``--check-cmd`` gives, as the escapes Python reads (the child decodes them).
HOSTILE_TEXT = {
    "surrogate": "\\ud800x",
    "esc": "\\x1b[31mred\\x1b[0m",
    "bell-nul": "a\\x07b\\x00c",
    "line-separator": "a\\u2028b",
    "nel": "a\\x85b",
    "bidi": "\\u202eevil",
    "del": "x\\x7fy",
    "newline": "one\\ntwo",
    "cr": "a\\rb",
    "noncharacter": "a\\uffffb",
}

ANSWERS = """import json, sys
said = sys.argv[1].encode().decode("unicode_escape")
for line in sys.stdin:
    looks = json.loads(line)["looks"]
    if not looks:
        print(json.dumps({"wait": 5}), flush=True)
    else:
        print(json.dumps({"verdict": {"ok": False, "reason": said, "machine": said}}), flush=True)
"""

SWEEP_HEAD = 'scenario = "sept25-crash-loop"\nchecks = ["count"]\nseeds = 1\n'


def _children() -> list[int]:
    """The pids of this process's live children (from /proc), but its pool servers
    (``tests.procs.pool_servers``): a case must leave none."""
    me, servers = os.getpid(), pool_servers()
    return [pid for pid, state, parent, _ in processes()
            if parent == me and state != "Z" and pid not in servers]


def _cli_corpus() -> list[Case]:
    cases: list[Case] = []

    def add(*args: object, **kwargs: object) -> None:
        cases.append(Case(*args, **kwargs))  # type: ignore[arg-type]

    # -- limits from the environment: each variable, each bad value, refused before work ----
    commands = {
        "compare": ["compare", SCENARIO, "--check", "count"],
        "list": ["list"],
        "rollout": ["rollout", "original"],
    }
    whole = [
        "TESTBED_MAX_FILE_BYTES",
        "TESTBED_MAX_RUNS",
        "TESTBED_MAX_SWEEP_POINTS",
        "TESTBED_MAX_WORKERS",
        "TESTBED_MAX_LOOKS",
    ]
    for name in whole:
        for value in ("nan", "abc", "-1", "99999999999999999999", "²", "1e3", "0"):
            add(
                f"env-{name}-{value}",
                "limits from the environment",
                commands["compare"],
                2,
                rf"{name}: must be a whole number from 1 to",
                env={name: value},
            )
    for name in ("TESTBED_MIN_PERIOD_S", "TESTBED_CHECK_TIMEOUT_S"):
        for value in ("nan", "abc", "-1", "inf", "1e400", "0"):
            add(
                f"env-{name}-{value}",
                "limits from the environment",
                commands["compare"],
                2,
                rf"{name}: must be a number of seconds greater than 0",
                env={name: value},
            )
    # A bad COLUMNS is ignored as terminals and libraries ignore it (issue 32): the command runs.
    for command, argv in commands.items():
        for value in ("²", "abc", "-1", "0", "99999999"):
            add(
                f"env-COLUMNS-{value}-{command}",
                "limits from the environment",
                argv,
                0,
                env={"COLUMNS": value},
            )
    for value in ("soon", "-1", "1.5"):
        add(
            f"env-SOURCE_DATE_EPOCH-{value}",
            "limits from the environment",
            commands["compare"],
            2,
            r"SOURCE_DATE_EPOCH: must be whole seconds",
            env={"SOURCE_DATE_EPOCH": value},
        )
    add(
        "env-TESTBED_SCENARIOS-missing",
        "limits from the environment",
        ["list"],
        2,
        r"TESTBED_SCENARIOS: must be an existing folder",
        env={"TESTBED_SCENARIOS": "/no/such"},
    )
    add(
        "env-good-limits-still-run",
        "limits from the environment",
        commands["compare"],
        0,
        env={"TESTBED_MAX_FILE_BYTES": "1_000_000_000_000_000", "TESTBED_MIN_PERIOD_S": "0.5"},
    )

    # -- text that breaks output: a check-cmd's reason and machine, into every output -------
    files = {"say.py": ANSWERS}
    for kind, text in HOSTILE_TEXT.items():
        command = ["--check-cmd", f"{sys.executable} say.py '{text}'", "--check-cmd-name", "say"]
        add(
            f"text-{kind}-report",
            "text that breaks output",
            ["compare", SCENARIO, "--check", "count", *command],
            0,
            files=files,
            stdout=_no_raw_controls,
        )
        add(
            f"text-{kind}-json",
            "text that breaks output",
            ["compare", SCENARIO, *command, "--json"],
            0,
            files=files,
            stdout=_json_doc,
        )
        add(
            f"text-{kind}-junit-record",
            "text that breaks output",
            ["compare", SCENARIO, *command, "--json", "--junit", "j.xml", "--record", "r.jsonl"],
            0,
            files=files,
            stdout=_json_doc,
        )
        add(
            f"text-{kind}-summary",
            "text that breaks output",
            ["compare", SCENARIO, "--runs", "2", *command],
            0,
            files=files,
            stdout=_no_raw_controls,
        )
    for kind, machine_id in (
        ("surrogate", "\\ud800"),
        ("esc", "\\u001b[2J"),
        ("nel", "\\u0085"),
        ("line-separator", "\\u2028"),
        ("raw-line-separator", "\u2028"),
        ("bidi", "\\u202e"),
    ):
        add(
            f"text-recorded-id-{kind}",
            "text that breaks output",
            ["replay", "ids.jsonl", "--check", "count"],
            0,
            files={"ids.jsonl": f"ID:{machine_id}"},
            stdout=_no_raw_controls,
        )
        add(
            f"text-recorded-id-{kind}-json-junit",
            "text that breaks output",
            ["replay", "ids.jsonl", "--check", "count", "--json", "--junit", "j.xml"],
            0,
            files={"ids.jsonl": f"ID:{machine_id}"},
            stdout=_json_doc,
        )

    # -- silently wrong, now refused -----------------------------------------------------------
    for axis in ("seed", "point", "check", "outcome"):
        add(
            f"sweep-reserved-axis-{axis}",
            "silently wrong",
            ["sweep", "s.toml", "--no-progress"],
            2,
            rf"axes: '{axis}' is a column of every row",
            {"s.toml": SWEEP_HEAD + f"[axes]\n{axis} = [1, 2]\n"},
            absent=["s.csv", "sweep.csv"],
        )
    for field_, text, rule in (
        ("seeds", "seeds = true", r"seeds: must be a whole number"),
        ("first_seed", "first_seed = true", r"first_seed: must be a whole number"),
        ("seed-list", "seeds = [1, true]", r"seeds: each must be a whole number"),
        ("axis-int", '[axes]\n"release.machines" = [true, 2]', r"release\.machines: must be a whole number"),
        ("axis-float", '[axes]\n"release.crash_after_s" = [true]', r"crash_after_s: must be a number"),
        (
            "random-count",
            '[axes]\n"release.crash_after_s" = { random = "uniform", low = 1, high = 2, count = true }',
            r"count: must be a whole number",
        ),
        (
            "random-seed",
            '[axes]\n"release.crash_after_s" = { random = "uniform", low = 1, high = 2, '
            "count = 2, seed = true }",
            r"seed: must be a whole number",
        ),
        (
            "range-step",
            '[axes]\n"release.crash_after_s" = { start = 1, stop = 2, step = true }',
            r"step: must be a number",
        ),
    ):
        body = (
            SWEEP_HEAD.replace("seeds = 1\n", "") + text + "\n"
            if field_ in ("seeds", "seed-list")
            else SWEEP_HEAD + text + "\n"
        )
        add(
            f"sweep-bool-{field_}",
            "silently wrong",
            ["sweep", "s.toml", "--no-progress"],
            2,
            rule,
            {"s.toml": body},
            absent=["s.csv", "sweep.csv"],
        )
    for key, value, rule in (
        ("fleet.servers", "true", r"fleet\.servers: must be a whole number"),
        ("balancer.unhealthy_threshold", "true", r"unhealthy_threshold: must be a whole number"),
        ("balancer.interval_s", "true", r"interval_s: must be a number"),
        ("deploy.lock", '"yes"', r"deploy\.lock: must be true or false"),
        ("deploy.verify", "1", r"deploy\.verify: must be true or false"),
        ("watchdog.enabled", '"no"', r"watchdog\.enabled: must be true or false"),
        ("seed", "true", r"seed: must be a whole number"),
    ):
        add(
            f"rollout-bool-{key}-{value}",
            "silently wrong",
            ["rollout", "original", "--set", f"{key}={value}"],
            2,
            rule,
        )
    for key, value, rule in (
        ("seed", "true", r"seed: must be a whole number"),
        ("horizon_s", "true", r"horizon_s: must be a number"),
        ("publish.at_s", "false", r"at_s: must be a number"),
        ("platform.event_log_cap", "true", r"event_log_cap: must be a whole number"),
        ("release.crash_after_starts", "true", r"crash_after_starts: must be a whole number"),
    ):
        add(
            f"compare-bool-{key}", "silently wrong", ["compare", SCENARIO, "--set", f"{key}={value}"], 2, rule
        )
    add(
        "replay-duplicate-ids",
        "silently wrong",
        ["replay", "dup.jsonl", "--check", "count"],
        2,
        r"machine id 'm1' appears twice",
        {"dup.jsonl": "DUPLICATE"},
    )
    for value in ("1e300", "inf", "nan", "0", "-1", "3601"):
        add(
            f"check-cmd-timeout-{value}",
            "silently wrong",
            ["compare", SCENARIO, "--check-cmd", "true", "--check-cmd-timeout", value],
            2,
            r"--check-cmd-timeout: must be a number of seconds greater than 0 and at most 3,600",
        )
    hunt = ["hunt", "--check", "count", "--budget", "1", "--no-progress"]
    add("hunt-out-empty", "silently wrong", [*hunt, "--out", ""], 2, r"--out: must name a folder")
    add("hunt-out-blank", "silently wrong", [*hunt, "--out", "  "], 2, r"--out: must name a folder")
    add(
        "hunt-out-earlier-finds",
        "silently wrong",
        [*hunt, "--out", "found"],
        2,
        r"--out found: holds 1 file\(s\) of an earlier hunt",
        {"found/old.toml": "# Found by: testbed hunt x\n"},
        untouched=["found/old.toml"],
    )
    add(
        "hunt-out-earlier-finds-forced",
        "silently wrong",
        [*hunt, "--out", "found", "--force"],
        1,
        files={"found/old.toml": "# Found by: testbed hunt x\n"},
        untouched=["found/old.toml"],
    )
    add(
        "hunt-out-other-toml-is-fine",
        "silently wrong",
        [*hunt, "--out", "found"],
        1,
        files={"found/mine.toml": "name = 'mine'\n"},
        untouched=["found/mine.toml"],
    )
    for seed in (str(2**64), str(2**63)):
        add(
            f"hunt-seed-{seed}",
            "silently wrong",
            [*hunt, "--seed", seed],
            2,
            r"--seed: must be a whole number from 0 to 2\*\*63 - 1",
        )
    for kind, name in (("newline", "a\\nb"), ("esc", "a\\u001bb"), ("tab", "a\\tb"), ("del", "a\\u007fb")):
        add(
            f"sweep-name-{kind}",
            "silently wrong",
            ["sweep", "s.toml", "--no-progress"],
            2,
            r"name: must be printable",
            {"s.toml": f'name = "{name}"\n' + SWEEP_HEAD + '[axes]\n"release.crash_after_s" = [2.5]\n'},
        )

    # -- loops without a floor: refused at once, not run ----------------------------------------
    random_axis = '{{ random = "uniform", low = 1, high = 3, count = {n} }}'
    add(
        "sweep-three-random-axes-1e18",
        "loops without a floor",
        ["sweep", "s.toml", "--no-progress"],
        2,
        r"axes: 1,000,000,000,000,000,000 worlds",
        {
            "s.toml": SWEEP_HEAD
            + "[axes]\n"
            + "\n".join(
                f'"{k}" = {random_axis.format(n=1_000_000)}'
                for k in ("release.crash_after_s", "platform.boot_s", "check.look_delay_s")
            )
            + "\n"
        },
    )
    add(
        "sweep-two-lists-past-limit",
        "loops without a floor",
        ["sweep", "s.toml", "--no-progress"],
        2,
        r"axes: 4 worlds.*more than the 3",
        {"s.toml": SWEEP_HEAD + '[axes]\n"release.crash_after_s" = [1, 2]\n"platform.boot_s" = [1, 2]\n'},
        env={"TESTBED_MAX_SWEEP_POINTS": "3"},
    )
    add(
        "compare-runs-past-env-limit",
        "loops without a floor",
        ["compare", SCENARIO, "--runs", "3"],
        2,
        r"--runs: .*at most 2",
        env={"TESTBED_MAX_RUNS": "2"},
    )
    add(
        "sweep-random-unknown-field",
        "loops without a floor",
        ["sweep", "s.toml", "--no-progress"],
        2,
        r"axes\.release\.crash_after_s\.bogus: unknown field",
        {
            "s.toml": SWEEP_HEAD + '[axes]\n"release.crash_after_s" = { random = "uniform", low = 1, '
            "high = 2, count = 2, bogus = 1 }\n"
        },
    )
    add(
        "sweep-random-float-seed",
        "loops without a floor",
        ["sweep", "s.toml", "--no-progress"],
        2,
        r"axes\.release\.crash_after_s\.seed: .*integer",
        {
            "s.toml": SWEEP_HEAD + '[axes]\n"release.crash_after_s" = { random = "uniform", low = 1, '
            "high = 2, count = 2, seed = 1.5 }\n"
        },
    )
    _bounded_cases(add)
    return cases


#: A check that always asks for another look now, taking the incremental mode when offered.
WAITS_INCREMENTAL = """import json, sys
for line in sys.stdin:
    answer = {"wait": 0}
    if '"supports"' in line:
        answer["incremental"] = True
    print(json.dumps(answer), flush=True)
"""
#: A check whose helper double-forks a ``setsid`` grandchild and exits: an orphan.
DOUBLE_FORK = """import json, os, subprocess, sys
if os.fork() == 0:
    child = subprocess.Popen(["sleep", "300"], start_new_session=True)
    open("g.pid.tmp", "w").write(str(child.pid)); os.rename("g.pid.tmp", "g.pid")
    os._exit(0)
os.wait()
for line in sys.stdin:
    print(json.dumps({"verdict": {"ok": True, "reason": "fine"}}), flush=True)
"""


def _orphan_gone(stdout: str) -> None:
    """The double fork's grandchild (its pid in g.pid) is not running after the command."""
    pid = int(Path("g.pid").read_text())
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return
    assert state == "Z", f"the orphaned grandchild {pid} still runs"


def _error_after_looks(looks: int) -> Callable[[str], None]:
    def check(stdout: str) -> None:
        runs = json.loads(stdout)["runs"]
        assert runs
        assert all("without a verdict" in str(run) and str(looks) in str(run) for run in runs)
    return check


def _bounded_cases(add: Callable[..., None]) -> None:
    """Issue 20's second round: floors, work estimates, the check budget's one rule, Dask."""
    loops, env, processes = "loops without a floor", "limits from the environment", "processes"
    for key, value, floor in (
        ("balancer.interval_s", "1e-9", "0.1"),
        ("balancer.interval_s", "0.001", "0.1"),
        ("balancer.interval_s", "-1", "0.1"),
        ("balancer.interval_s", "0.0999", "0.1"),
        ("watchdog.interval_s", "1e-9", "0.01"),
        ("watchdog.interval_s", "0.001", "0.01"),
    ):
        add(f"rollout-floor-{key}-{value}", loops,
            ["rollout", "fixed", "--set", f"{key}={value}"], 2,
            rf"{key}: must be at least {floor} s: .* once per interval")
    huge = ["--set", "fleet.servers=100", "--set", "watchdog.interval_s=0.01",
            "--set", "settle_s=86400"]
    add("rollout-estimate-huge", loops, ["rollout", "original", *huge], 2,
        r"original: a run would take about 1,1\d\d,\d{3},\d{3} events .*past the limit of "
        r"5,000,000 .*TESTBED_MAX_ROLLOUT_EVENTS\)$")
    add("rollout-estimate-balancer", loops,
        ["rollout", "original", "--set", "fleet.servers=100", "--set", "balancer.interval_s=0.1",
         "--set", "settle_s=86400"], 2, r"balancer probes .*past the limit of 5,000,000")
    add("rollout-estimate-lowered", loops, ["rollout", "original"], 2,
        r"past the limit of 100 ", env={"TESTBED_MAX_ROLLOUT_EVENTS": "100"})
    add("rollout-estimate-raised-runs", loops, ["rollout", "original", "--json"], 0,
        env={"TESTBED_MAX_ROLLOUT_EVENTS": "1000000000"})
    add("check-cmd-incremental-2000-looks", loops,
        ["compare", SCENARIO, "--check-cmd", f"{sys.executable} w.py", "--max-looks", "2000",
         "--json"], 0, files={"w.py": WAITS_INCREMENTAL}, stdout=_error_after_looks(2000))
    for address in ("inproc://", "inproc://127.0.0.1/1/1", "tcp://", "tcp://127.0.0.1",
                    "localhost:99999", "udp://127.0.0.1:8786", "tcp://:8786", "tcp://a b:1"):
        add(f"sweep-dask-address-{address}", loops,
            ["sweep", "s.toml", "--no-progress", "--dask", address], 2,
            r"^testbed: --dask: must be tcp://HOST:PORT", {"s.toml": SWEEP_HEAD},
            absent=["out"])
    add("sweep-dask-closed-port", loops,
        ["sweep", "s.toml", "--no-progress", "--dask", "tcp://127.0.0.1:1"], 2,
        r"--dask tcp://127\.0\.0\.1:1: cannot reach the scheduler \(Connection refused\)",
        {"s.toml": SWEEP_HEAD}, absent=["out"])
    for value in ("nan", "0", "abc", "-5", "1e9"):
        add(f"env-TESTBED_MAX_ROLLOUT_EVENTS-{value}", env, ["rollout", "original"], 2,
            r"TESTBED_MAX_ROLLOUT_EVENTS: must be a whole number from 1 to",
            env={"TESTBED_MAX_ROLLOUT_EVENTS": value})
    for value in ("1e300", "86401", "1e-400"):
        add(f"env-TESTBED_CHECK_TIMEOUT_S-{value}", env, ["compare", SCENARIO, "--check", "count"],
            2, r"TESTBED_CHECK_TIMEOUT_S: must be a number of seconds greater than 0 and at most "
            r"86,400", env={"TESTBED_CHECK_TIMEOUT_S": value})
    for flag, value, rule in (
        ("--check-timeout", "1e300", r"must be a number of seconds greater than 0 and at most 86,400"),
        ("--check-timeout", "nan", r"must be a number of seconds"),
        ("--check-timeout", "-0", r"must be a number of seconds"),
        ("--max-looks", "0", r"must be a whole number from 1 to"),
        ("--check-cmd-timeout", "3601", r"must be a number of seconds greater than 0 and at most 3,600"),
    ):
        argv = ["compare", SCENARIO, flag, value]
        argv += ["--check-cmd", "true"] if flag == "--check-cmd-timeout" else ["--check", "count"]
        add(f"flag-{flag}-{value}", env, argv, 2, rf"{flag}: {rule}")
    add("check-cmd-double-fork-orphan", processes,
        ["compare", SCENARIO, "--check-cmd", f"{sys.executable} d.py", "--json"], 0,
        files={"d.py": DOUBLE_FORK}, stdout=_orphan_gone)


def _no_raw_controls(stdout: str) -> None:
    """The report holds no raw control character, separator or surrogate."""
    bad = [
        c
        for c in stdout
        if (ord(c) < 32 and c not in "\n\t")
        or 0x7F <= ord(c) <= 0x9F
        or c in "\u2028\u2029\u202e"
        or 0xD800 <= ord(c) <= 0xDFFF
    ]
    assert not bad, f"raw {bad!r} in {stdout!r}"


def _json_doc(stdout: str) -> None:
    json.loads(stdout)


@dataclass(frozen=True)
class ApiCase:
    """One hostile call of the Python API and what it must end with."""

    id: str
    call: Callable[[], object]
    #: A regex the BadInput's message must match, or None: the call returns a result.
    message: str | None


def _boom(options: object) -> object:
    raise RuntimeError("factory broke")


def _api_corpus() -> list[ApiCase]:
    cases: list[ApiCase] = []

    def add(id_: str, call: Callable[[], object], message: str | None) -> None:
        cases.append(ApiCase(id_, call, message))

    scenario_rule = r"scenario: must be a shipped scenario's name or a path"
    for label, value in (
        ("42", 42),
        ("None", None),
        ("list", [SCENARIO]),
        ("bytes", b"x"),
        ("nul", "a\0b"),
        ("surrogate", "\ud800"),
        ("empty", ""),
    ):
        rule = scenario_rule if label not in ("nul", "surrogate", "empty") else r"scenario: must be"
        add(f"api-run-scenario-{label}", lambda v=value: api.run(v, "count"), rule)
        add(f"api-compare-scenario-{label}", lambda v=value: api.compare(v, "count"), rule)
        add(f"api-hunt-scenario-{label}", lambda v=value: api.hunt("count", v, budget=1), rule)
        add(f"api-load-scenario-{label}", lambda v=value: api.load_scenario(v), r"name_or_path: must be")
        add(f"api-load-rollout-{label}", lambda v=value: api.load_rollout(v), r"name_or_path: must be")
    add("api-rollout-42", lambda: api.rollout(42), r"scenario: must be a shipped rollout")
    add("api-sweep-None", lambda: api.sweep(None), r"spec: must be a shipped sweep")
    add("api-sweep-42", lambda: api.sweep(42), r"spec: must be a shipped sweep")
    for label, value in (("list", [1, 2]), ("string", "abc"), ("int-keys", {5: 5}), ("pairs", [("a", 1)])):
        rule = r"options: each key must be" if label == "int-keys" else r"options: must be a mapping"
        add(f"api-run-options-{label}", lambda v=value: api.run(SCENARIO, "count", options=v), rule)
        add(f"api-build-options-{label}", lambda v=value: api.build(SCENARIO, "count", options=v), rule)
        add(f"api-compare-options-{label}", lambda v=value: api.compare(SCENARIO, "count", options=v), rule)
    add("api-hunt-progress-x", lambda: api.hunt("count", progress="x", budget=1), r"progress: must be None")
    add(
        "api-hunt-factory-raises",
        lambda: api.hunt(_boom, budget=1),
        r"check: the factory raised RuntimeError",
    )
    add(
        "api-hunt-factory-garbage",
        lambda: api.hunt(lambda o: 42, budget=1),
        r"check: the factory must return",
    )
    add(
        "api-hunt-seed-2**64",
        lambda: api.hunt("count", seed=2**64, budget=1),
        r"seed: must be a whole number",
    )
    add("api-run-trace-yes", lambda: api.run(SCENARIO, "count", trace="yes"), r"trace: must be True or False")
    add(
        "api-compare-generator-past-limit",
        lambda: _with_env(
            {"TESTBED_MAX_RUNS": "2"}, lambda: api.compare(SCENARIO, "count", seeds=(i for i in range(5)))
        ),
        r"seeds: more than 2 seeds",
    )
    add(
        "api-compare-count-endless",
        lambda: _with_env(
            {"TESTBED_MAX_RUNS": "3"}, lambda: api.compare(SCENARIO, "count", seeds=itertools.count())
        ),
        r"seeds: more than 3 seeds",
    )
    add(
        "api-compare-generator-within-limit",
        lambda: _with_env(
            {"TESTBED_MAX_RUNS": "2"}, lambda: api.compare(SCENARIO, "count", seeds=(i for i in range(2)))
        ),
        None,
    )
    add(
        "api-rollout-range-1e9",
        lambda: api.rollout("original", seeds=range(10**9)),
        r"seeds: must be at most",
    )
    add("api-rollout-endless", lambda: api.rollout("original", seeds=itertools.count()), r"seeds: more than")
    add(
        "api-sweep-workers-past-env",
        lambda: _with_env({"TESTBED_MAX_WORKERS": "1"}, lambda: api.sweep("x", workers=2)),
        r"workers: must be at most 1",
    )
    add(
        "api-env-nan-period",
        lambda: _with_env({"TESTBED_MIN_PERIOD_S": "nan"}, lambda: api.run(SCENARIO, "count")),
        r"TESTBED_MIN_PERIOD_S: must be a number",
    )
    add(
        "api-sets-endless",
        lambda: api.load_scenario(SCENARIO, sets=(f"seed={i}" for i in itertools.count())),
        r"sets: more than 10,000 items",
    )
    add(
        "api-checks-raising-iterator",
        lambda: api.compare(SCENARIO, checks=_raising()),
        r"checks: its iterator raised ValueError",
    )
    add(
        "api-seeds-raising-iterator",
        lambda: api.compare(SCENARIO, "count", seeds=_raising()),
        r"seeds: the seeds' iterator raised ValueError",
    )
    return cases


def _raising() -> object:
    yield "count"
    raise ValueError("half way")


def _with_env(env: dict[str, str], call: Callable[[], object]) -> object:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return call()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


CLI = _cli_corpus()
API = _api_corpus()
assert len({c.id for c in CLI}) == len(CLI), "two CLI cases share an id"
assert len({c.id for c in API}) == len(API), "two API cases share an id"


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real recording of the incident world, for the replay cases."""
    from platform_testbed.sim.cli.parser import main  # noqa: PLC0415

    path = tmp_path_factory.mktemp("rec") / "rec.jsonl"
    assert main(["compare", SCENARIO, "--check", "count", "--record", str(path), "--json"]) == 0
    return path.read_text()


def _recording_files(case: Case, recording: str) -> Case:
    """Recording placeholders made concrete: ``ID:<json escape>`` and ``DUPLICATE``."""
    files: dict[str, str | bytes] = {}
    for name, content in case.files.items():
        if isinstance(content, str) and content.startswith("ID:"):
            lines = [line.replace('"id":"m1"', f'"id":"{content[3:]}"') for line in recording.split("\n")]
            files[name] = "\n".join(lines)
        elif content == "DUPLICATE":
            looks = [json.loads(line) for line in recording.split("\n") if line]
            for look in looks:
                look["machines"].append(look["machines"][0])
            files[name] = "\n".join(json.dumps(look) for look in looks) + "\n"
        else:
            files[name] = content
    return Case(
        case.id,
        case.klass,
        case.argv,
        case.code,
        case.message,
        files,
        case.env,
        case.stdout,
        case.absent,
        case.untouched,
    )


@pytest.mark.parametrize("case", CLI, ids=[c.id for c in CLI])
def test_hostile_command_line(
    case: Case,
    tmp_path: Path,
    recording: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Exit 0/1/2 as stated, no traceback, one line naming the rule, in time, no child left."""
    folder = tmp_path / "case"
    folder.mkdir()
    code, out, err, elapsed = _run(_recording_files(case, recording), folder, recording, capsys, monkeypatch)
    assert "Traceback" not in err + out
    assert code == case.code, f"exit {code}, expected {case.code}; stderr: {err!r}"
    assert elapsed < TIME_BOUND_S, f"took {elapsed:.1f} s"
    if case.code == 2:
        import re  # noqa: PLC0415

        lines = err.strip().splitlines()
        assert len(lines) == 1, f"expected one line on stderr, got {err!r}"
        assert re.search(case.message, lines[0]), f"{lines[0]!r} !~ {case.message!r}"
    if case.stdout is not None:
        case.stdout(out)
    for name in case.absent:
        assert not (folder / name).exists(), f"{name} was written"
    if (folder / "j.xml").exists():
        import xml.etree.ElementTree as ET  # noqa: PLC0415

        ET.parse(folder / "j.xml")
    deadline = time.monotonic() + 2.0
    while _children() and time.monotonic() < deadline:  # a killed child is reaped at once
        time.sleep(0.05)
    assert not _children(), f"child processes left: {_children()}"


@pytest.mark.parametrize("case", API, ids=[c.id for c in API])
def test_hostile_api_call(case: ApiCase) -> None:
    """A result or one-line BadInput naming the parameter and the rule, nothing else, in time."""
    import re  # noqa: PLC0415

    started = time.monotonic()
    if case.message is None:
        case.call()
    else:
        with pytest.raises(api.BadInput) as refused:
            case.call()
        message = str(refused.value)
        assert "\n" not in message
        assert re.search(case.message, message), f"{message!r} !~ {case.message!r}"
    assert time.monotonic() - started < TIME_BOUND_S


def test_corpus_counts() -> None:
    """At least 150 cases over every class the issue names; printed with -s for the closing note."""
    counts = Counter(c.klass for c in CLI) + Counter({"the Python API": len(API)})
    ends = {k: Counter(f"exit {c.code}" for c in CLI if c.klass == k) for k in counts}
    ends["the Python API"] = Counter("BadInput" if c.message else "result" for c in API)
    for klass, n in counts.items():
        print(f"{klass}: {n} inputs, {dict(ends[klass])}")
    assert set(counts) == {
        "limits from the environment",
        "text that breaks output",
        "silently wrong",
        "loops without a floor",
        "processes",
        "the Python API",
    }
    assert sum(counts.values()) >= 150, counts
