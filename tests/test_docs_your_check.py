"""docs/your-check.md runs as written: every python block, every testbed command, every output.

The doc's blocks, in order, in an empty directory (``examples/`` of the checkout linked
into it, as a reader in a checkout has it):

- ```` ```python FILE ```` is saved as FILE and imported (later blocks import it too);
- ```` ```python ```` runs in one namespace shared by all python blocks;
- ```` ```sh ```` lines are ``testbed …`` commands, run through ``sim.cli.parser.main``; each ends
  with ``# exits N`` (0 or 1) and must exit so;
- ```` ```text ```` is the stdout of the block just above it (a python block, or the sh
  block's last command), compared exactly;
- ```` ```console ```` is shown, not run (``testbed hunt``, still being built).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main
from tests.doc_blocks import blocks, run_python

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "your-check.md"
EXITS = re.compile(r"\s+# exits ([01])$")


def _blocks() -> list[tuple[str, str, str]]:
    return blocks(DOC)


def _commands(body: str) -> list[tuple[list[str], int]]:
    joined = body.replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        if not line.strip():
            continue
        said = EXITS.search(line)
        assert said, f"a sh command must say how it exits (# exits 0|1): {line}"
        words = shlex.split(line[: said.start()])
        assert words[0] == "testbed", line
        commands.append((words[1:], int(said.group(1))))
    return commands


def test_the_doc_has_every_kind_of_block_and_hunt_only_where_it_is_not_run():
    """The doc shows a saved check, python, testbed commands with output, and hunt in console only."""
    blocks = _blocks()
    kinds = [kind for kind, _, _ in blocks]
    assert {"python", "sh", "text", "console"} <= set(kinds)
    assert any(kind == "python" and name for kind, name, _ in blocks)
    for kind, _, body in blocks:
        if "testbed hunt" in body:
            assert kind == "console"
    assert not {k for k in kinds if k not in {"python", "sh", "text", "console"}}


def test_every_block_of_the_doc_runs_as_written(tmp_path, monkeypatch, capsys):
    """Run the doc top to bottom: blocks execute, commands exit as said, outputs match."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict[str, object] = {"__name__": "your_check_doc"}
    last_output: str | None = None
    ran = 0
    try:
        for kind, name, body in _blocks():
            if kind == "python":
                if name:  # a file the reader saves: run it by importing it
                    (tmp_path / name).write_text(body, encoding="utf-8")
                    out = io.StringIO()
                    with contextlib.redirect_stdout(out):
                        importlib.import_module(Path(name).stem)
                    last_output = out.getvalue()
                else:
                    last_output = run_python(body, namespace, f"{DOC.name}:block")
                ran += 1
            elif kind == "sh":
                for argv, expected in _commands(body):
                    if any("node " in word for word in argv) and shutil.which("node") is None:
                        continue  # the example check in another language is JavaScript
                    capsys.readouterr()
                    code = main(argv)
                    last_output = capsys.readouterr().out
                    assert code == expected, (argv, code)
                    ran += 1
            elif kind == "text":
                assert last_output is not None, "a text block with no block above it"
                assert last_output.strip() == body.strip()
                last_output = None
    finally:
        for module in [m for m, mod in sys.modules.items()
                       if str(getattr(mod, "__file__", "") or "").startswith(str(tmp_path))]:
            del sys.modules[module]
    assert ran >= 10


@pytest.mark.parametrize("line", [
    "testbed compare x   # exits 0",
    "testbed compare \\\n  x   # exits 1",
])
def test_sh_commands_are_read_with_their_exit_status(line):
    """A sh line (continued with a backslash or not) gives its words and the exit it states."""
    [(argv, code)] = _commands(line)
    assert argv == ["compare", "x"]
    assert code == int(line[-1])
