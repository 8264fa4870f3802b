"""A doc's fenced blocks, run as a reader would: shared by the tests of the README and ``docs/``.

A block is ```` ```KIND [NAME] ```` … ```` ``` ````; a block with no kind (shown, never
run) is not one. ``run_python`` runs a python block in a namespace the doc's blocks share
and returns what it printed, for the ``text`` block after it. ``PAGES`` are the pages of the
documentation (the README, the site's front page, and every page of ``docs/``), and
``output_blocks`` the command outputs they show, wherever a page keeps them.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

BLOCK = re.compile(r"^```(\w+)[ \t]*([^\n`]*)\n(.*?)^```$", re.S | re.M)
#: A command's saved output: ``<!-- output: testbed ARGS -->``, the output, ``<!-- end output -->``.
OUTPUT = re.compile(r"<!-- output: testbed (.+?) -->\n(.*?)<!-- end output -->\n", re.S)

ROOT = Path(__file__).resolve().parent.parent
#: The documentation's pages: the README, then docs/ in path order (docs/hooks is the site's code).
PAGES = (ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts))


def blocks(doc: Path) -> list[tuple[str, str, str]]:
    """Every (kind, name, body) of the doc's blocks that say their kind, in order."""
    return BLOCK.findall(doc.read_text(encoding="utf-8"))


def output_blocks() -> list[tuple[Path, str, str]]:
    """Every (page, testbed arguments, output shown) of the documentation, in page order."""
    return [(page, command, shown) for page in PAGES
            for command, shown in OUTPUT.findall(page.read_text(encoding="utf-8"))]


def page_name(page: Path) -> str:
    """The page's path from the repository root, as a test id says it."""
    return page.relative_to(ROOT).as_posix()


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
