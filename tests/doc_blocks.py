"""A doc's fenced blocks, run as a reader would: shared by the tests of ``docs/*.md``.

A block is ```` ```KIND [NAME] ```` … ```` ``` ````; a block with no kind (shown, never
run) is not one. ``run_python`` runs a python block in a namespace the doc's blocks share
and returns what it printed, for the ``text`` block after it.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

BLOCK = re.compile(r"^```(\w+)[ \t]*([^\n`]*)\n(.*?)^```$", re.S | re.M)


def blocks(doc: Path) -> list[tuple[str, str, str]]:
    """Every (kind, name, body) of the doc's blocks that say their kind, in order."""
    return BLOCK.findall(doc.read_text(encoding="utf-8"))


def run_python(body: str, namespace: dict[str, object], where: str) -> str:
    """Run one python block in ``namespace``; return its stdout.

    The block is compiled as the reader's own code: this module's ``__future__`` imports
    do not leak into it (``dont_inherit``).
    """
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(body, where, "exec", dont_inherit=True), namespace)
    return out.getvalue()


def same_text(printed: str, shown: str) -> bool:
    """Whether a block printed what the doc shows, line by line (trailing blanks aside)."""
    def lines(text: str) -> list[str]:
        return [line.rstrip() for line in text.strip("\n").splitlines()]

    return lines(printed) == lines(shown)
