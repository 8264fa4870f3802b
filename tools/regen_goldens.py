"""Regenerate the saved outputs that tests diff against, after an intended change.

Run ``.venv/bin/python tools/regen_goldens.py`` and commit the result with the reason in
the message: each scenario script's ``.out``, each rollout scenario's ``.out`` and the
blocks marked ``<!-- output: testbed ... -->`` on every page of the documentation (the
README and ``docs/``: ``tests/doc_blocks.PAGES``). The tests that read these files
only remember; the tests beside them (expectations, oracles, properties) judge.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from platform_testbed.sim.cli.parser import main  # noqa: E402
from platform_testbed.sim.config import scenario  # noqa: E402
from platform_testbed.sim.rollout.config import rollouts_dir, shipped  # noqa: E402
from platform_testbed.sim.show.table import DEFAULT_WIDTH  # noqa: E402
from tests.doc_blocks import PAGES  # noqa: E402

# Tables are drawn at COLUMNS (sim/show/table.py): the goldens at the width off a terminal,
# whatever terminal runs this (tests/conftest.py pins the same for the tests).
os.environ["COLUMNS"] = str(DEFAULT_WIDTH)

BLOCK = re.compile(r"(<!-- output: testbed (.+?) -->\n)(.*?)(<!-- end output -->\n)", re.S)


def _stdout(fn, argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn(argv)
    return out.getvalue()


def main_() -> None:
    """Rewrite every saved output from the code as it is now."""
    for name in sorted(scenario.shipped()):
        script = ROOT / "scenarios" / f"{name}.py"
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              check=True, cwd=ROOT)
        script.with_suffix(".out").write_text(done.stdout, encoding="utf-8")
    for name in sorted(shipped()):
        text = _stdout(main, ["rollout", name, "--runs", "5"])
        (rollouts_dir() / f"{name}.out").write_text(text, encoding="utf-8")

    def fill(match: re.Match[str]) -> str:
        printed = _stdout(main, shlex.split(match.group(2))).strip() + "\n"
        fenced = match.group(3).startswith("```")
        body = f"```\n{printed}```\n" if fenced else printed
        return match.group(1) + body + match.group(4)

    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        if (filled := BLOCK.sub(fill, text)) != text:
            page.write_text(filled, encoding="utf-8")


if __name__ == "__main__":
    main_()
