"""Shell completion (issue 13): `testbed completion SHELL` and argcomplete's hook.

The shell asks by running `testbed` with `_ARGCOMPLETE=1`, `COMP_LINE` and `COMP_POINT`
set; argcomplete writes the candidates to fd 8, or to `_ARGCOMPLETE_STDOUT_FILENAME`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from platform_testbed.checks import BUILTIN_CHECKS
from platform_testbed.sim.cli import completion
from platform_testbed.sim.cli.parser import build_parser, main
from platform_testbed.sim.config import scenario

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("shell", completion.SHELLS)
def test_completion_prints_a_script_for_each_shell(shell, capsys):
    """`testbed completion SHELL` exits 0 with a script that registers `testbed` in that shell."""
    assert main(["completion", shell]) == 0
    out = capsys.readouterr().out
    registers = {"bash": "complete -o nospace -o default -o bashdefault -F _python_argcomplete testbed",
                 "zsh": "compdef _python_argcomplete testbed",
                 "fish": "complete --command testbed"}
    assert registers[shell] in out
    assert "_ARGCOMPLETE" in out


def test_an_unknown_shell_is_bad_input(capsys):
    """A shell argcomplete is not asked for here is refused in one line, exit 2."""
    with pytest.raises(SystemExit) as ended:
        main(["completion", "tcsh"])
    assert ended.value.code == 2
    assert "invalid choice: 'tcsh'" in capsys.readouterr().err


def test_every_completer_is_attached_to_an_argument():
    """Each (subcommand, argument) in COMPLETERS exists: a renamed option cannot go unnoticed."""
    assert sorted(completion.attach(build_parser())) == sorted(completion.COMPLETERS)


def _complete(line: str, tmp_path: Path) -> list[str]:
    answer = tmp_path / "candidates"
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
           "COMP_POINT": str(len(line)), "_ARGCOMPLETE_STDOUT_FILENAME": str(answer),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "platform_testbed"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    return [c.strip() for c in answer.read_text().splitlines()]


def test_the_hook_completes_subcommands(tmp_path):
    """`testbed comp<TAB>` offers compare and completion, and nothing else."""
    assert sorted(_complete("testbed comp", tmp_path)) == ["compare", "completion"]


def test_the_hook_completes_shipped_scenarios_and_toml_files(tmp_path):
    """`testbed compare sept<TAB>` offers the shipped scenario; a .toml beside it completes too."""
    assert _complete("testbed compare sept", tmp_path) == [
        n for n in scenario.shipped() if n.startswith("sept")]
    (tmp_path / "september.toml").write_text("")
    assert "september.toml" in _complete("testbed compare sept", tmp_path)


def test_the_hook_completes_check_names(tmp_path):
    """`--check <TAB>` offers the built-in checks; `--check ti<TAB>` only timestamp."""
    assert _complete("testbed compare sept25-crash-loop --check ", tmp_path) == list(BUILTIN_CHECKS)
    assert _complete("testbed hunt --check ti", tmp_path) == ["timestamp"]


def test_completion_help_prints_one_install_line_per_shell(capsys):
    """`completion --help` keeps each shell's install command on a line of its own, whole."""
    with pytest.raises(SystemExit) as ended:
        main(["completion", "--help"])
    assert ended.value.code == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    for shell in completion.SHELLS:
        assert completion.HOW[shell] in lines
