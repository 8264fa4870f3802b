"""A user's project with its own ``checks/`` and ``sim/`` packages, and the testbed run from it.

Issue 17: the installed testbed must work inside a deploy-tool repository that has a
``checks/`` folder of its own (and a ``sim/``). This makes such a project in a temporary
folder and, from inside it (the current folder), runs the three ways a user runs the
testbed: the ``testbed`` console script (``compare --check checks.mine:MyCheck``, and the
project's ``checks.restarts``, named like a module of the testbed's own), the Python API
(``from platform_testbed.sim import api``), and pytest collecting a test file that imports
``platform_testbed.sim.kit.strategies``. Each must use the user's modules and the testbed's.

Usage: ``python tools/user_project.py BIN`` where ``BIN`` is the ``bin/`` folder of the
environment the testbed is installed in (its ``python`` and ``testbed``; pytest and
hypothesis too). Exit 0 when all three hold, else 1 with what went wrong.
``tests/test_user_project.py`` runs it on the editable install, ``tools/wheel_smoke.sh`` on
the wheel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: The user's own check: a module of their ``checks`` package.
MINE = '''"""The user's deploy check (their repository's checks/ package)."""

from platform_testbed.checks import Verdict, Wait


class MyCheck:
    """Pass once 20 s of looks showed every machine started; fail at the first that is not."""

    name = "my-check"

    def next(self, publish_started_ms, looks):
        if not looks:
            return Wait(1.0)
        latest = looks[-1]
        for machine in latest.machines:
            if machine.state != "started":
                return Verdict(False, f"mine: {machine.id} is {machine.state}", machine.id)
        if latest.at_ms - publish_started_ms >= 20_000:
            return Verdict(True, "mine: every machine started for 20 s")
        return Wait(1.0)
'''

#: Named as a module of the testbed's own ``checks`` package is: must not be that one.
RESTARTS = '''"""The user's module that shares its name with the testbed's checks/restarts.py."""

from platform_testbed.checks import Verdict


class MyCheck:
    """Fail at once, saying whose module this is."""

    name = "user-restarts"

    def next(self, publish_started_ms, looks):
        return Verdict(False, "the user's own checks.restarts")
'''

USER_SIM = '''"""The user's own sim/ package (a simulator of their own, say)."""

WHO = "the user's sim"
'''

API_SCRIPT = '''
import json
import checks.mine, checks.restarts, sim
from platform_testbed.sim import api
from platform_testbed.sim.kit import strategies  # noqa: F401 -- imports beside the user's packages

result = api.compare("sept25-crash-loop", ["checks.mine:MyCheck", "timestamp"])
print(json.dumps({
    "sim": sim.WHO,
    "mine": checks.mine.__file__,
    "restarts": checks.restarts.__file__,
    "api": api.__file__,
    "outcomes": {r.check: r.outcome for r in result.seeds[0].results},
    "reasons": {r.check: (r.verdict.reason if r.verdict else r.error) for r in result.seeds[0].results},
}))
'''

USER_TEST = '''"""The user's own test of their check, with the testbed's kit."""

from pathlib import Path

from checks.mine import MyCheck
from platform_testbed.sim.kit.strategies import always_decides, assert_guarantee, worlds


def test_my_check_is_the_projects():
    """The check under test is the project's, not anything installed."""
    assert Path(__import__("checks.mine").mine.__file__).parent.parent == Path.cwd()


def test_my_check_always_decides():
    """MyCheck gives a verdict in every world the kit draws."""
    assert_guarantee(MyCheck(), always_decides, worlds=worlds(), max_examples=10)
'''


def make_project(root: Path) -> Path:
    """Write the user's project under ``root``; return its folder."""
    project = root / "deploy-tool"
    for package, files in {
        "checks": {"__init__.py": '"""The user\'s checks."""\n', "mine.py": MINE,
                   "restarts.py": RESTARTS},
        "sim": {"__init__.py": USER_SIM},
        "tests": {"test_mine.py": USER_TEST},
    }.items():
        (project / package).mkdir(parents=True)
        for name, text in files.items():
            (project / package / name).write_text(text)
    return project


def _env() -> dict[str, str]:
    """The caller's environment without anything that points into a checkout or changes limits."""
    return {k: v for k, v in os.environ.items()
            if k != "PYTHONPATH" and not k.startswith("TESTBED_")}


def _run(args: list[str], project: Path) -> subprocess.CompletedProcess[str]:
    print("$", " ".join(args), file=sys.stderr)
    return subprocess.run(args, cwd=project, env=_env(), capture_output=True, text=True,
                          timeout=300, check=False)


def _fail(what: str, done: subprocess.CompletedProcess[str]) -> str:
    return f"{what} (exit {done.returncode})\nstdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}"


def check_project(bin_dir: Path, project: Path) -> list[str]:
    """Run the three ways from inside ``project``; return what failed (empty: all held)."""
    problems: list[str] = []
    testbed, python = str(bin_dir / "testbed"), str(bin_dir / "python")
    for spec, name, reason in (("checks.mine:MyCheck", "my-check", "mine: "),
                               ("checks.restarts:MyCheck", "user-restarts", "the user's own")):
        done = _run([testbed, "compare", "sept25-crash-loop", "--check", spec, "--json"], project)
        if done.returncode != 0:
            problems.append(_fail(f"testbed compare --check {spec}", done))
            continue
        results = json.loads(done.stdout)["runs"][0]["results"]
        if [r["check"] for r in results] != [name] or reason not in results[0]["reason"]:
            problems.append(f"testbed compare --check {spec}: ran {results!r}, not the project's")
    done = _run([python, "-c", API_SCRIPT], project)
    if done.returncode != 0:
        problems.append(_fail("the Python API", done))
    else:
        seen = json.loads(done.stdout.splitlines()[-1])
        if seen["sim"] != "the user's sim":
            problems.append(f"the Python API: `import sim` gave {seen['sim']!r}")
        for module in ("mine", "restarts"):
            if Path(seen[module]).parent.parent != project:
                problems.append(f"the Python API: checks.{module} came from {seen[module]}")
        if Path(seen["api"]).parent.parent == project:
            problems.append("the Python API: platform_testbed.sim.api came from the project")
        # The incident's crash loop: the user's check sees a machine down and fails it.
        if seen["outcomes"] != {"my-check": "caught", "timestamp": "caught"} or \
                not str(seen["reasons"]["my-check"]).startswith("mine: "):
            problems.append(f"the Python API: unexpected results {seen}")
    done = _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_mine.py"],
                project)
    if done.returncode != 0 or "2 passed" not in done.stdout:
        problems.append(_fail("pytest in the project", done))
    return problems


def main(argv: list[str]) -> int:
    """Make the project in a temporary folder, run the three ways, report."""
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    bin_dir = Path(argv[0]).resolve()
    with tempfile.TemporaryDirectory(prefix="testbed-user-project.") as folder:
        problems = check_project(bin_dir, make_project(Path(folder)))
    for problem in problems:
        print(f"user-project: {problem}", file=sys.stderr)
    if not problems:
        print("user-project: ok (CLI, Python API and pytest, from a project with its own "
              "checks/ and sim/)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
