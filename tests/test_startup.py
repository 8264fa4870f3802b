"""A fast start: the parser, --help, --version and a shell's Tab import none of the model.

Each case runs in a fresh interpreter (this one has imported everything already) and
reports the top-level packages in ``sys.modules`` when it is done. What is asserted is
the import set, not a time: a time depends on the machine, an import does not
(``benchmarks/bench_startup.py`` measures the times).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: What costs tens to hundreds of ms to import, and no parser needs (rich: a bar or a table).
HEAVY = ("simpy", "numpy", "pydantic", "hypothesis", "matplotlib", "pandas", "rich")

# Runs main(ARGV) and writes the heavy packages then imported to REPORT. A completion
# request ends in argcomplete's exit (os._exit: no atexit, no finally), so its exit is
# replaced by one that writes the report first.
SCRIPT = """
import functools, json, os, sys
import argcomplete

def report(code=0):
    found = sorted({name.partition(".")[0] for name in sys.modules} & set(HEAVY))
    with open(os.environ["REPORT"], "w") as out:
        json.dump({"heavy": found, "code": code}, out)
    os._exit(code)

argcomplete.autocomplete = functools.partial(argcomplete.autocomplete, exit_method=report)
from platform_testbed.sim.cli.parser import build_parser, main
try:
    code = main(ARGV) if ARGV is not None else (build_parser(), 0)[1]
except SystemExit as ended:
    code = ended.code
report(code)
"""


def _imported(tmp_path: Path, argv: list[str] | None, line: str | None = None) -> dict[str, object]:
    """Run one case in a fresh interpreter; its exit status and the heavy packages it imported."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REPORT": str(tmp_path / "report.json")}
    env.pop("_ARGCOMPLETE", None)
    if line is not None:
        env |= {"_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
                "COMP_POINT": str(len(line)),
                "_ARGCOMPLETE_STDOUT_FILENAME": str(tmp_path / "candidates")}
    code = SCRIPT.replace("HEAVY", repr(HEAVY)).replace("ARGV", repr(argv))
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                          capture_output=True, text=True, check=False, timeout=60)
    result: dict[str, object] = json.loads((tmp_path / "report.json").read_text())
    assert done.returncode == result["code"], done.stderr
    return result


def test_building_the_parser_imports_none_of_the_model(tmp_path):
    """build_parser() (every subcommand, every option) leaves the heavy packages unimported."""
    assert _imported(tmp_path, None) == {"heavy": [], "code": 0}


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["compare", "--help"],
                                  ["sweep", "--help"], ["rollout", "--help"], ["hunt", "--help"],
                                  ["compare", "sept25-crash-loop", "--no-such-option"]])
def test_help_version_and_a_typo_import_none_of_the_model(argv, tmp_path):
    """--help, --version and a mistyped option answer without the model (exit 0, or 2)."""
    assert _imported(tmp_path, argv) == {"heavy": [], "code": 2 if "--no-such-option" in argv else 0}


@pytest.mark.parametrize("line", [
    "testbed comp",  # subcommands
    "testbed compare sept",  # shipped scenario names (and .toml files)
    "testbed compare sept25-crash-loop --check ",  # built-in check names
    "testbed rollout ",  # shipped rollouts
    "testbed sweep ",  # shipped sweeps
    "testbed series ",  # shipped series
    "testbed hunt --",  # a subcommand's options
])
def test_a_tab_imports_none_of_the_model(line, tmp_path):
    """argcomplete's request, completers included, answers without the model."""
    assert _imported(tmp_path, [], line) == {"heavy": [], "code": 0}
    assert (tmp_path / "candidates").read_text().strip(), "the Tab offered nothing"


def test_a_command_still_imports_what_it_runs(tmp_path):
    """The lazy imports happen: `testbed list` loads the scenario models (pydantic) it reads."""
    heavy = _imported(tmp_path, ["list"])["heavy"]
    assert isinstance(heavy, list)
    assert "pydantic" in heavy


# Raises SIGNAL from inside the first import of simpy (the model), as if the user pressed
# Ctrl-C (or the system sent SIGTERM) while a command's modules were still loading.
SIGNAL_DURING_IMPORT = """
import signal, sys

class SignalOnImport:
    def find_spec(self, name, path=None, target=None):
        if name == "simpy":
            sys.meta_path.remove(self)
            signal.raise_signal(SIGNUM)
        return None

sys.meta_path.insert(0, SignalOnImport())
from platform_testbed.sim.cli.parser import main
sys.exit(main(["compare", "sept25-crash-loop"]))
"""


@pytest.mark.parametrize(("signum", "code", "said"), [(2, 130, "testbed: interrupted"),
                                                      (15, 143, "testbed: terminated")])
def test_a_signal_while_the_model_imports_ends_quietly(signum, code, said, tmp_path):
    """Ctrl-C or SIGTERM during a command's imports: 130 or 143, one line, no traceback."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("_ARGCOMPLETE", None)
    done = subprocess.run([sys.executable, "-c", SIGNAL_DURING_IMPORT.replace("SIGNUM", str(signum))],
                          env=env, cwd=tmp_path, capture_output=True, text=True, check=False,
                          timeout=60)
    assert (done.returncode, done.stderr.strip()) == (code, said)
    assert done.stdout == ""


# The console script (sim.cli.launch) with SIGNAL raised from inside the import of the CLI
# itself, before sim.cli.parser.main can install its handlers.
SIGNAL_DURING_CLI_IMPORT = """
import signal, sys

class SignalOnImport:
    def find_spec(self, name, path=None, target=None):
        if name == "platform_testbed.sim.cli.parser":
            sys.meta_path.remove(self)
            signal.raise_signal(SIGNUM)
        return None

sys.meta_path.insert(0, SignalOnImport())
sys.argv = ["testbed", "list"]
from platform_testbed.sim.cli.launch import main
sys.exit(main())
"""


@pytest.mark.parametrize(("signum", "code", "said"), [(2, 130, "testbed: interrupted"),
                                                      (15, 143, "testbed: terminated")])
def test_a_signal_while_the_cli_itself_imports_ends_quietly(signum, code, said, tmp_path):
    """The console script: a signal during ``import sim.cli.parser`` is 130 or 143, one line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("_ARGCOMPLETE", None)
    script = SIGNAL_DURING_CLI_IMPORT.replace("SIGNUM", str(signum))
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path,
                          capture_output=True, text=True, check=False, timeout=60)
    assert (done.returncode, done.stderr.strip()) == (code, said)
    assert done.stdout == ""


def test_the_console_script_is_the_quiet_launcher():
    """The ``testbed`` entry point and both ``python -m`` doors start at sim.cli.launch."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'testbed = "platform_testbed.sim.cli.launch:main"' in text
    for door in (ROOT / "sim" / "__main__.py", ROOT / "platform_testbed" / "__main__.py"):
        assert "from platform_testbed.sim.cli.launch import main" in door.read_text(encoding="utf-8")
