"""Hostile input: the corpus of issue 12, rebuilt from its text.

Each case runs the ``testbed`` command line in this process (as a person would type it,
but without a new interpreter per case, so the corpus stays fast) and asserts the contract:

* the exit status is 0, 1 or 2 as the case says (never a traceback, never 130 for a
  KeyboardInterrupt that a user's check raised);
* bad input (exit 2) is ONE line on stderr naming the field and the rule;
* nothing is half-written: a refused output path holds what it held before, and no
  temporary file is left next to it;
* the case ends within ``TIME_BOUND_S`` (a case that would run without bound must be
  refused at the door, or cut by a limit).

The classes, as the issue lists them: malformed and non-UTF-8 TOML, wrong types,
NaN/inf/huge values through files and ``--set``, bad sweep axes, bad output paths, broken
recordings, user checks that raise, loop, sleep or return garbage, unbounded counts, and a
look with zero machines. ``CLASS_OF`` names each case's class; ``test_corpus_counts`` prints
how each class ends.
"""

from __future__ import annotations

import faulthandler
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main

#: Every case, including the ones that run a world or a one-world sweep, ends well within
#: this on a slow CI core: the limits make sure nothing is unbounded.
TIME_BOUND_S = 5.0

SCENARIO = "sept25-crash-loop"

USER_CHECKS = '''
import time
from platform_testbed.checks import Verdict, Wait

class Raises:
    name = "raises"
    def next(self, publish_started_ms, looks):
        raise RuntimeError("boom")

class Interrupts:
    """Raises KeyboardInterrupt itself: a bug of the check, not the user's Ctrl-C."""
    name = "interrupts"
    def next(self, publish_started_ms, looks):
        raise KeyboardInterrupt

class Exits:
    name = "exits"
    def next(self, publish_started_ms, looks):
        raise SystemExit(3)

class Loops:
    name = "loops"
    def next(self, publish_started_ms, looks):
        while True:
            pass

class SwallowsOnce:
    """Catches the first interruption and loops again: the limit keeps firing."""
    name = "swallows-once"
    def next(self, publish_started_ms, looks):
        try:
            while True:
                pass
        except BaseException:
            pass
        while True:
            pass

class Sleeps:
    name = "sleeps"
    def next(self, publish_started_ms, looks):
        time.sleep(3600)

class WaitString:
    name = "wait-string"
    def next(self, publish_started_ms, looks):
        return Wait("5")

class WaitInf:
    name = "wait-inf"
    def next(self, publish_started_ms, looks):
        return Wait(float("inf"))

class Garbage:
    name = "garbage"
    def next(self, publish_started_ms, looks):
        return 42

class NeverDecides:
    name = "never-decides"
    def next(self, publish_started_ms, looks):
        return Wait(0)

class BadName:
    @property
    def name(self):
        raise RuntimeError("no name today")
    def next(self, publish_started_ms, looks):
        return Verdict(True, "fine") if looks else Wait(1)
'''

SWEEP = """scenario = "sept25-crash-loop"
checks = [{checks}]
seeds = 1
[axes]
"release.crash_after_s" = [2.5]
"""


@dataclass
class Case:
    """One hostile input: the command line, what it must end with, and its class."""

    id: str
    klass: str
    argv: list[str]
    code: int
    #: For exit 2: a regex the one stderr line must match (the field and the rule).
    message: str = ""
    #: Files to write in the case's folder first: name -> text or bytes.
    files: dict[str, str | bytes] = field(default_factory=dict)
    #: Extra environment for the case (limits raised or lowered).
    env: dict[str, str] = field(default_factory=dict)
    #: A check on stdout (e.g. the outcome is ``error``).
    stdout: Callable[[str], None] | None = None
    #: Paths (relative to the case folder) that must not exist afterwards.
    absent: list[str] = field(default_factory=list)
    #: Paths whose content must be unchanged afterwards.
    untouched: list[str] = field(default_factory=list)


def _series_errors(stdout: str, check: str) -> None:
    """series --json: the check's outcome is error in every publish of the series."""
    publishes = json.loads(stdout)["publishes"]
    assert publishes
    assert all(p["outcomes"][check] == "error" for p in publishes), publishes


def _outcome(check: str, outcome: str, reason: str = "") -> Callable[[str], None]:
    """A stdout check: compare --json gives ``outcome`` for ``check`` (reason matching)."""

    def verify(stdout: str) -> None:
        doc = json.loads(stdout)
        if "runs" in doc:  # compare
            results = [r for run in doc["runs"] for r in run["results"] if r["check"] == check]
            assert results, f"no result for {check}"
            assert all(r["outcome"] == outcome for r in results), results
            assert all(re.search(reason, r["reason"] or "") for r in results), results
        elif "results" in doc:  # replay
            rows = [r for r in doc["results"] if r["check"] == check]
            assert rows, f"no row for {check}"
            assert all(r["verdict"] is None for r in rows), rows
            assert all(re.search(reason, r["reason"]) for r in rows), rows
        else:  # sweep summary
            summary = doc["checks"][check]
            assert summary["rows"] >= 1, doc
            assert summary["errors"] == summary["rows"], doc

    return verify


def _summary_error(check: str) -> Callable[[str], None]:
    def verify(stdout: str) -> None:
        doc = json.loads(stdout)
        assert doc["summary"][check]["error"] >= 1, doc["summary"]

    return verify


def _no_pass(stdout: str) -> None:
    doc = json.loads(stdout)
    verdicts = [r["verdict"] for r in doc["results"]]
    assert verdicts, doc
    assert "pass" not in verdicts, verdicts


BAD_UTF8 = b'name = "caf\xe9"\nseed = 1\n'
DEEP_TOML = "x = " + "[" * 5000 + "]" * 5000 + "\n"
DEEP_JSON = "[" * 100_000 + "]" * 100_000


def _corpus() -> list[Case]:  # noqa: PLR0915 -- one table of cases, read top to bottom
    cases: list[Case] = []

    def add(*args: object, **kwargs: object) -> None:
        cases.append(Case(*args, **kwargs))  # type: ignore[arg-type]

    # -- malformed and non-UTF-8 TOML, for every command that reads a TOML file --------------
    readers = {
        "compare": ["compare", "{f}"],
        "rollout": ["rollout", "{f}"],
        "lint-timing": ["lint-timing", "{f}"],
        "sweep": ["sweep", "{f}", "--no-progress", "--workers", "1"],
        "series": ["series", "{f}"],
        "hunt": ["hunt", "--check", "count", "--scenario", "{f}", "--budget", "1",
                 "--no-progress"],
    }
    for command, argv in readers.items():
        for kind, text, rule in (
            ("non-utf8", BAD_UTF8, r"bad\.toml: not UTF-8 text"),
            ("malformed", 'name = "x\nseed = \n', r"bad\.toml: malformed TOML"),
            ("deep", DEEP_TOML, r"bad\.toml: malformed TOML: nested too deeply"),
            ("empty-bytes", b"\x00\x01\x02", r"bad\.toml: malformed TOML"),
            ("missing", None, r"cannot read"),
            ("directory", "DIR", r"cannot read"),
        ):
            files: dict[str, str | bytes] = {}
            if isinstance(text, bytes | str) and text != "DIR":
                files["bad.toml"] = text
            elif text == "DIR":
                files["bad.toml/keep"] = ""
            add(f"{command}-{kind}-toml", "malformed or non-UTF-8 TOML",
                [a.replace("{f}", "bad.toml") for a in argv], 2, rule, files)

    # -- wrong types, through files and --set --------------------------------------------------
    base = 'name = "t"\nseed = 1\nhorizon_s = 300\n'
    for key, value, rule in (
        ("platform.machines", "true", r"machines"),
        ("release.machines", "true", r"release\.machines: .*integer"),
        ("release.machines", "'three'", r"release\.machines: .*integer"),
        ("horizon_s", "'long'", r"horizon_s: .*number"),
        ("seed", "1.5", r"seed: .*integer"),
        ("release.crash_after_s", "[1, 2]", r"release\.crash_after_s: .*number"),
        ("check", "3", r"check"),
        ("a.b.c", "1", r"keys are 'field' or 'table\.field'"),
    ):
        add(f"compare-set-{key}-{value}", "wrong types", ["compare", SCENARIO, "--set",
            f"{key}={value}"], 2, rule)
    add("compare-file-wrong-type", "wrong types", ["compare", "t.toml"], 2,
        r"t\.toml: horizon_s: .*number", {"t.toml": base.replace("300", '"long"')})
    add("compare-check-opt-wrong-type", "wrong types",
        ["compare", SCENARIO, "--check", "count", "--check-opt", "look_delay_s=[1]"], 2,
        r"look_delay_s")
    add("compare-check-opt-nan", "NaN/inf/huge values",
        ["compare", SCENARIO, "--check", "count", "--check-opt", "look_delay_s=nan"], 2,
        r"look_delay_s.*finite")
    add("compare-check-opt-inf", "NaN/inf/huge values",
        ["compare", SCENARIO, "--check", "count", "--check-opt", "look_delay_s=inf"], 2,
        r"look_delay_s.*finite")
    # Out of the range each check declares (checks/options.py): refused before any world runs.
    for check, option, value, rule in (
        ("count", "look_delay_s", "-1", "seconds >= 0"),
        ("count", "poll_s", "0", "seconds > 0"),
        ("restart-counter", "start_timeout_s", "-0.5", "seconds >= 0"),
        ("flyctl-smoke", "backoff_min_s", "0", "seconds > 0"),
        ("min-healthy-time", "healthy_deadline_s", "-inf", "seconds >= 0"),
        ("circuit-breaker", "failure_percent", "-1", "whole number >= 0"),
    ):
        add(f"compare-check-opt-{check}-{option}-{value}", "NaN/inf/huge values",
            ["compare", SCENARIO, "--check", check, "--check-opt", f"{option}={value}"], 2,
            rf"--check-opt {option}={value}: {check}'s {option} must be a finite number of {rule}"
            if "seconds" in rule else rf"{check}'s {option} must be a {rule}")
    add("rollout-set-wrong-type", "wrong types", ["rollout", "original", "--set",
        "fleet.servers='many'"], 2, r"fleet\.servers: .*integer")
    add("sweep-wrong-type", "wrong types", ["sweep", "s.toml", "--no-progress"], 2,
        r"s\.toml: seeds", {"s.toml": SWEEP.format(checks='"count"').replace(
            "seeds = 1", 'seeds = "many"')})

    # -- NaN / inf / huge values ---------------------------------------------------------------
    for key, value in (
        ("publish.at_s", "inf"), ("publish.at_s", "nan"), ("horizon_s", "inf"),
        ("horizon_s", "1e300"), ("release.crash_after_s", "nan"),
        ("release.crash_after_s", "inf"), ("platform.boot_s", "-inf"),
        ("check.look_delay_s", "inf"), ("platform.epoch_ms", "1e30"),
        ("release.machines", "10000000"),
    ):
        add(f"compare-set-{key}={value}", "NaN/inf/huge values",
            ["compare", SCENARIO, "--set", f"{key}={value}"], 2,
            re.escape(key.split(".")[-1]))
    add("compare-file-inf", "NaN/inf/huge values", ["compare", "t.toml"], 2,
        r"t\.toml: horizon_s: .*finite", {"t.toml": base.replace("300", "inf")})
    add("compare-crash-loop-1us", "unbounded counts",
        ["compare", SCENARIO, "--set", "release.crash_after_s=0.000001",
         "--set", "platform.boot_s=0", "--set", "platform.restart_delay_s=0"], 2,
        r"release\.crash_after_s: .*millisecond.*TESTBED_")
    for key, value in (
        ("deploy.at_s", "inf"), ("settle_s", "inf"), ("deploy.healthy_timeout_s", "inf"),
        ("deploy.shutdown_s", "nan"), ("watchdog.interval_s", "0.000001"),
        ("balancer.interval_s", "inf"), ("traffic.rps", "nan"), ("deploy.at_s", "1e300"),
    ):
        add(f"rollout-set-{key}={value}", "NaN/inf/huge values",
            ["rollout", "original", "--set", f"{key}={value}"], 2,
            re.escape(key.split(".")[-1]))
    add("lint-timing-inf", "NaN/inf/huge values", ["lint-timing", "r.toml"], 2,
        r"r\.toml: balancer\.interval_s", {"r.toml": 'name = "r"\n[balancer]\ninterval_s = inf\n'})

    # -- bad sweep axes ------------------------------------------------------------------------
    for id_, axis, rule in (
        ("inf-range", "{ start = 1, stop = inf, step = 1 }", r"axes\..*finite"),
        ("nan-step", "{ start = 1, stop = 2, step = nan }", r"axes\..*finite"),
        ("inf-random", '{ random = "uniform", low = 1, high = inf, count = 3 }',
         r"axes\..*finite"),
        ("1e12-points", "{ start = 1, stop = 1e12, step = 1 }", r"axes\..*TESTBED_MAX_SWEEP_POINTS"),
        ("tiny-step", "{ start = 1, stop = 2, step = 1e-300 }", r"axes\..*TESTBED_MAX_SWEEP_POINTS"),
        ("empty-range", "{ start = 5, stop = 1, step = 1 }", r"axes\..*empty range"),
        ("empty-list", "[]", r"axes\..*at least one value"),
        ("nan-in-list", "[1.0, nan]", r"axes\..*finite"),
    ):
        text = SWEEP.format(checks='"count"').replace("[2.5]", axis)
        add(f"sweep-axis-{id_}", "bad sweep axes", ["sweep", "s.toml", "--no-progress",
            "--workers", "1"], 2, rule, {"s.toml": text}, absent=["s.csv", "sweep.csv"])
    grid = (SWEEP.format(checks='"count"').replace('"release.crash_after_s" = [2.5]',
            '"release.crash_after_s" = { start = 1, stop = 2000, step = 1 }\n'
            '"check.look_delay_s" = { start = 1, stop = 2000, step = 1 }'))
    add("sweep-product-too-big", "bad sweep axes", ["sweep", "s.toml", "--no-progress"], 2,
        r"axes: .*4,000,000 worlds.*TESTBED_MAX_SWEEP_POINTS", {"s.toml": grid})
    add("sweep-seeds-huge", "bad sweep axes", ["sweep", "s.toml", "--no-progress"], 2,
        r"seeds", {"s.toml": SWEEP.format(checks='"count"').replace("seeds = 1",
                                                                     "seeds = 100000000")})

    # -- bad output paths ----------------------------------------------------------------------
    one = SWEEP.format(checks='"count"')
    add("sweep-out-directory", "bad output paths",
        ["sweep", "s.toml", "--no-progress", "--workers", "1", "--out", "dir.csv"], 2,
        r"--out dir\.csv: is a directory", {"s.toml": one, "dir.csv/keep": ""})
    add("sweep-out-symlink-devnull", "bad output paths",
        ["sweep", "s.toml", "--no-progress", "--workers", "1", "--out", "o.csv"], 2,
        r"--out o\.csv: is a symlink.*--force", {"s.toml": one, "o.csv": "->/dev/null"})
    add("sweep-out-missing-folder", "bad output paths",
        ["sweep", "s.toml", "--no-progress", "--workers", "1", "--out", "nope/x.csv"], 2,
        r"--out nope/x\.csv: cannot write: no such directory", {"s.toml": one})
    add("sweep-heatmap-missing-folder", "bad output paths",
        ["sweep", "s2.toml", "--no-progress", "--workers", "1", "--out", "x.csv",
         "--heatmap", "nope/h.png"], 2, r"--heatmap nope/h\.png: cannot write: no such directory",
        {"s2.toml": SWEEP.format(checks='"count"').replace(
            '"release.crash_after_s" = [2.5]',
            '"release.crash_after_s" = [2.5]\n"check.look_delay_s" = [5.0]')},
        absent=["x.csv"])
    add("sweep-heatmap-directory", "bad output paths",
        ["sweep", "s2.toml", "--no-progress", "--workers", "1", "--out", "x.csv",
         "--heatmap", "h.png"], 2, r"--heatmap h\.png: is a directory",
        {"s2.toml": SWEEP.format(checks='"count"').replace(
            '"release.crash_after_s" = [2.5]',
            '"release.crash_after_s" = [2.5]\n"check.look_delay_s" = [5.0]'), "h.png/keep": ""},
        absent=["x.csv"])
    add("sweep-name-escapes", "bad output paths", ["sweep", "s.toml", "--no-progress"], 2,
        r"name: .*one file name", {"s.toml": 'name = "../escaped"\n' + one},
        absent=["../escaped.csv"])
    add("sweep-name-absolute", "bad output paths", ["sweep", "s.toml", "--no-progress"], 2,
        r"name: .*one file name", {"s.toml": 'name = "/tmp/hostile-abs"\n' + one})
    add("compare-record-directory", "bad output paths",
        ["compare", SCENARIO, "--record", "rec"], 2, r"--record rec: is a directory",
        {"rec/keep": ""})
    add("compare-record-devnull", "bad output paths",
        ["compare", SCENARIO, "--record", "/dev/null"], 2,
        r"--record /dev/null: .*device.*--force")
    add("compare-record-symlink-devnull", "bad output paths",
        ["compare", SCENARIO, "--record", "link.jsonl"], 2,
        r"--record link\.jsonl: .*symlink.*--force", {"link.jsonl": "->/dev/null"})
    add("compare-record-missing-folder", "bad output paths",
        ["compare", SCENARIO, "--record", "nope/r.jsonl"], 2,
        r"--record nope/r\.jsonl: cannot write: no such directory")
    add("compare-timeline-missing-folder", "bad output paths",
        ["compare", SCENARIO, "--timeline", "nope/t.png"], 2,
        r"--timeline nope/t\.png: cannot write: no such directory")
    add("compare-timeline-directory", "bad output paths",
        ["compare", SCENARIO, "--timeline", "t.png"], 2, r"--timeline t\.png: is a directory",
        {"t.png/keep": ""})
    add("compare-record-symlink-file-kept", "bad output paths",
        ["compare", SCENARIO, "--record", "link2.jsonl"], 2, r"symlink",
        {"target.txt": "precious\n", "link2.jsonl": "->target.txt"}, untouched=["target.txt"])

    # -- broken recordings ---------------------------------------------------------------------
    for id_, text, rule in (
        ("deep-json", DEEP_JSON, r"r\.jsonl: .*nested too deeply"),
        ("deep-json-line", '{"look": ' + "[" * 50_000 + "]" * 50_000 + "}\n",
         r"r\.jsonl: .*nested too deeply"),
        ("non-utf8", b"\xff\xfe{}", r"r\.jsonl: .*UTF-8"),
        ("empty", "", r"r\.jsonl: "),
        ("garbage", "hello\n", r"r\.jsonl: "),
        ("number", "12\n", r"r\.jsonl: "),
        ("machines-not-list", '{"machines": 3}', r"r\.jsonl: "),
    ):
        add(f"replay-{id_}", "broken recordings", ["replay", "r.jsonl"], 2, rule,
            {"r.jsonl": text})
    add("replay-directory", "broken recordings", ["replay", "."], 2, r"cannot read")

    # -- user checks that raise, loop, sleep or return garbage ---------------------------------
    budget = ["--check-timeout", "0.3"]
    bad_checks = {
        "Raises": ("raises", r"RuntimeError: boom"),
        "Interrupts": ("interrupts", r"KeyboardInterrupt"),
        "Exits": ("exits", r"SystemExit"),
        "Loops": ("loops", r"0\.3 s"),
        "SwallowsOnce": ("swallows-once", r"0\.3 s"),
        "Sleeps": ("sleeps", r"0\.3 s"),
        "WaitString": ("wait-string", r"Wait\(seconds='5'\)"),
        "WaitInf": ("wait-inf", r"finite"),
        "Garbage": ("garbage", r"42"),
        "NeverDecides": ("never-decides", r"50 looks"),
        "BadName": ("BadName", r"name.*no name today"),
    }
    for attr, (name, reason) in bad_checks.items():
        limits = [*budget, "--max-looks", "50"]
        add(f"compare-check-{attr}", "user checks that misbehave",
            ["compare", SCENARIO, "--check", f"uc.py:{attr}", "--json", *limits], 0,
            files={"uc.py": USER_CHECKS}, stdout=_outcome(name, "error", reason))
        # The longest recorded run (min-healthy-time's, 50 looks at the sept25 point) must
        # end before the replay's look limit.
        replay_limits = [*budget, "--max-looks", "100"]
        add(f"replay-check-{attr}", "user checks that misbehave",
            ["replay", "rec.jsonl", "--check", f"uc.py:{attr}", "--json", *replay_limits], 0,
            files={"uc.py": USER_CHECKS, "rec.jsonl": "RECORDING"},
            # A recording ends before the look limit: the run is undecided, not an error.
            stdout=_outcome(name, "error", "ran out of looks" if attr == "NeverDecides"
                            else reason))
    for attr in ("Raises", "Interrupts", "Sleeps", "WaitString", "BadName"):
        name = bad_checks[attr][0]
        add(f"sweep-check-{attr}", "user checks that misbehave",
            ["sweep", "s.toml", "--no-progress", "--workers", "1", "--json", "--out", "o.csv",
             *budget], 0, files={"uc.py": USER_CHECKS,
                                 "s.toml": SWEEP.format(checks=f'"uc.py:{attr}"')},
            stdout=_outcome(name, "error"))
    for attr in ("Raises", "Interrupts", "Loops", "WaitString"):
        add(f"hunt-check-{attr}", "user checks that misbehave",
            ["hunt", "--check", f"uc.py:{attr}", "--budget", "2", "--no-progress", "--json",
             "--out", "hunted"], 1, files={"uc.py": USER_CHECKS},
            env={"TESTBED_CHECK_TIMEOUT_S": "0.2"},
            stdout=_hunt_found_error)
    add("series-check-Sleeps", "user checks that misbehave",
        ["series", "sept25-three-publishes", "--check", "count", "--check", "timestamp",
         "--check", "uc.py:Sleeps", "--json", *budget], 0,
        files={"uc.py": USER_CHECKS},
        stdout=lambda out: _series_errors(out, "sleeps"))
    add("checks-table-raises", "user checks that misbehave",
        ["checks", "--runs", "1", "--check", "uc.py:Raises", "--json"], 0,
        files={"uc.py": USER_CHECKS},
        stdout=lambda out: _all_errors(out, "raises"))

    # -- unbounded counts ----------------------------------------------------------------------
    add("compare-runs-1e9-text", "unbounded counts", ["compare", SCENARIO, "--runs", "1e9"], 2,
        r"--runs: invalid int value")
    add("compare-runs-1e9", "unbounded counts", ["compare", SCENARIO, "--runs", "1000000000"],
        2, r"--runs: .*at most 1,000,000.*TESTBED_MAX_RUNS")
    add("checks-runs-1e9", "unbounded counts", ["checks", "--runs", "1000000000"], 2,
        r"--runs: .*at most .*TESTBED_MAX_RUNS")
    add("compare-runs-env-lowered", "unbounded counts", ["compare", SCENARIO, "--runs", "3"],
        2, r"--runs: .*at most 2", env={"TESTBED_MAX_RUNS": "2"})
    add("compare-runs-env-garbage", "unbounded counts", ["compare", SCENARIO], 2,
        r"TESTBED_MAX_RUNS: .*whole number", env={"TESTBED_MAX_RUNS": "lots"})
    add("rollout-runs-huge", "unbounded counts", ["rollout", "original", "--runs",
        "1000000000"], 2, r"--runs")
    add("sweep-workers-100000", "unbounded counts",
        ["sweep", "s.toml", "--no-progress", "--workers", "100000"], 2,
        r"--workers: .*at most .*TESTBED_MAX_WORKERS", {"s.toml": one}, absent=["sweep.csv"])
    add("sweep-workers-0", "unbounded counts",
        ["sweep", "s.toml", "--no-progress", "--workers", "0"], 2, r"--workers: .*at least 1",
        {"s.toml": one})
    add("compare-check-timeout-zero", "unbounded counts",
        ["compare", SCENARIO, "--check-timeout", "0"], 2, r"--check-timeout: .*greater than 0")
    add("compare-check-timeout-inf", "unbounded counts",
        ["compare", SCENARIO, "--check-timeout", "inf"], 2,
        r"--check-timeout: must be a number of seconds .* \(got inf\)")
    add("compare-max-looks-zero", "unbounded counts",
        ["compare", SCENARIO, "--max-looks", "0"], 2, r"--max-looks: must be a whole number from 1")
    add("hunt-budget-huge", "unbounded counts",
        ["hunt", "--check", "count", "--budget", "1000000000"], 2, r"--budget")

    # -- a look with zero machines -------------------------------------------------------------
    add("replay-zero-machines", "a look with zero machines",
        ["replay", "empty.json", "--at-ms", "1000", "--publish-ms", "0", "--json"], 0,
        files={"empty.json": '{"machines": []}'}, stdout=_no_pass)
    add("replay-zero-machines-array", "a look with zero machines",
        ["replay", "empty.json", "--at-ms", "1000", "--publish-ms", "0", "--json"], 0,
        files={"empty.json": "[]"}, stdout=_no_pass)
    add("compare-zero-machines", "a look with zero machines",
        ["compare", SCENARIO, "--set", "release.machines=0"], 2, r"release\.machines: .*greater than")
    return cases


def _hunt_found_error(stdout: str) -> None:
    doc = json.loads(stdout)
    assert "error" in json.dumps(doc), doc


def _all_errors(stdout: str, check: str) -> None:
    doc = json.loads(stdout)
    for scenario, outcomes in doc["outcomes"].items():
        counts = outcomes[check]
        assert counts["error"] == 1, (scenario, counts)
        assert sum(counts.values()) == 1, (scenario, counts)


CORPUS = _corpus()
CLASS_OF = {case.id: case.klass for case in CORPUS}
assert len(CLASS_OF) == len(CORPUS), "two cases share an id"


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real recording of the incident world (every built-in's looks), for the replay cases."""
    path = tmp_path_factory.mktemp("rec") / "rec.jsonl"
    assert main(["compare", SCENARIO, "--record", str(path), "--json"]) == 0
    return path.read_text()


def _write(folder: Path, files: dict[str, str | bytes], recording: str) -> None:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith("/keep"):
            continue
        if isinstance(content, str) and content.startswith("->"):
            path.symlink_to(content[2:])
        elif content == "RECORDING":
            path.write_text(recording)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def _run(case: Case, folder: Path, recording: str, capsys: pytest.CaptureFixture[str],
         monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str, float]:
    _write(folder, case.files, recording)
    monkeypatch.chdir(folder)
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    before = {p: (folder / p).read_bytes() for p in case.untouched}
    capsys.readouterr()
    # A safety net, not the bound: a case that hangs dumps every thread's stack and ends
    # the test process rather than blocking the suite forever.
    faulthandler.dump_traceback_later(60, exit=True, file=sys.__stderr__)
    started = time.monotonic()
    try:
        code = main(case.argv)
    except SystemExit as exiting:  # argparse ends with SystemExit: its status is the code
        code = exiting.code if isinstance(exiting.code, int) else 2
    finally:
        elapsed = time.monotonic() - started
        faulthandler.cancel_dump_traceback_later()
    out, err = capsys.readouterr()
    for p, content in before.items():
        assert (folder / p).read_bytes() == content, f"{p} was changed"
    return code, out, err, elapsed


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_hostile(case: Case, tmp_path: Path, recording: str,
                 capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "case"
    folder.mkdir()
    code, out, err, elapsed = _run(case, folder, recording, capsys, monkeypatch)
    assert "Traceback" not in err
    assert "Traceback" not in out
    assert code == case.code, f"exit {code}, expected {case.code}; stderr: {err!r}"
    assert elapsed < TIME_BOUND_S, f"took {elapsed:.1f} s"
    if case.code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, f"expected one line on stderr, got {err!r}"
        assert re.search(case.message, lines[0]), f"{lines[0]!r} !~ {case.message!r}"
        assert out == ""
    if case.stdout is not None:
        case.stdout(out)
    for name in case.absent:
        assert not (folder / name).exists(), f"{name} was written"
    leftovers = [p.name for p in folder.rglob(".*") if p.name.endswith(".tmp") or ".jsonl." in
                 p.name or ".csv." in p.name]
    assert not leftovers, f"temporary files left: {leftovers}"


def test_corpus_counts() -> None:
    """The corpus covers every class the issue names, each with several inputs."""
    counts = Counter(CLASS_OF.values())
    ends = {k: Counter(f"exit {c.code}" for c in CORPUS if c.klass == k) for k in counts}
    for klass, n in counts.items():  # shown with pytest -s: the closing note
        print(f"{klass}: {n} inputs, {dict(ends[klass])}")
    assert set(counts) == {
        "malformed or non-UTF-8 TOML", "wrong types", "NaN/inf/huge values", "bad sweep axes",
        "bad output paths", "broken recordings", "user checks that misbehave",
        "unbounded counts", "a look with zero machines",
    }
    assert min(counts.values()) >= 3, counts


def test_device_output_allowed_with_force(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """--force writes to a device on purpose (a pipe, /dev/null), not through a rename."""
    monkeypatch.chdir(tmp_path)
    assert main(["compare", SCENARIO, "--record", "/dev/null", "--force", "--json"]) == 0
    assert Path("/dev/null").is_char_device()


def test_real_ctrl_c_still_interrupts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A KeyboardInterrupt a check raises is its error; the user's Ctrl-C still ends the run."""
    (tmp_path / "uc.py").write_text(USER_CHECKS)
    child = subprocess.Popen(
        [sys.executable, "-m", "platform_testbed", "compare", SCENARIO, "--check", "uc.py:Sleeps",
         "--check-timeout", "30"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=os.environ | {"PYTHONPATH": str(Path(__file__).parents[1])},
    )
    time.sleep(2.5)
    child.send_signal(signal.SIGINT)
    _out, err = child.communicate(timeout=20)
    assert child.returncode == 130, err
    assert err.strip() == "testbed: interrupted"


def test_details_stream_one_line_per_seed_and_json_stays_small(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Past the inline limit, --json holds the summary only; --details has every run."""
    details = tmp_path / "d.jsonl"
    assert main(["compare", "healthy-release", "--runs", "12", "--seed", "3", "--json",
                 "--details", str(details)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "runs" not in doc
    assert doc["runs_count"] == 12
    assert sum(doc["summary"]["count"].values()) == 12
    lines = [json.loads(line) for line in details.read_text().splitlines()]
    assert [line["seed"] for line in lines] == list(range(3, 15))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_json_size_does_not_grow_with_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The summary document of 11 and of 60 runs differ only in the digits of the counts."""
    sizes = []
    for runs in ("11", "60"):
        assert main(["compare", "sept25-crash-loop", "--runs", runs, "--json"]) == 0
        sizes.append(len(capsys.readouterr().out))
    assert abs(sizes[1] - sizes[0]) < 100, sizes


def test_summary_prints_the_counts_alone(capsys: pytest.CaptureFixture[str]) -> None:
    """--summary with one run: the outcome table, not the side-by-side report."""
    assert main(["compare", "sept25-crash-loop", "--summary"]) == 0
    out = capsys.readouterr().out
    assert "1 seeds (1…1)" in out
    assert "mean decide" in out


SLOW_COMMAND = '''import sys, time
for line in sys.stdin:
    time.sleep(1.0)  # answers, but after the driver's limit
    print('{"wait": 1}', flush=True)
'''


def test_a_command_check_cut_by_the_limit_is_error_in_every_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--check-timeout below a --check-cmd's own timeout: each run ends as error, in time."""
    monkeypatch.chdir(tmp_path)
    Path("slow.py").write_text(SLOW_COMMAND)
    code = main(["compare", SCENARIO, "--runs", "2", "--json", "--check-timeout", "0.3",
                 "--check-cmd", f"{sys.executable} slow.py", "--check-cmd-name", "slow"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    results = [r for run in doc["runs"] for r in run["results"]]
    assert [r["outcome"] for r in results] == ["error", "error"]
    assert all("0.3 s" in r["reason"] for r in results), results
