"""Tables and prose for people, drawn by rich at the terminal's width; lines never wrap.

A table wider than the width is transposed when that fits; otherwise its columns are
folded into blocks that each fit, the row labels repeated in each (as R and pandas print
wide frames), so every cell is still whole on one line. Only columns marked ``prose``
(descriptions, reasons) fold inside their cells. Off a terminal (a pipe, a file, a test,
a saved output) the width is fixed, so the same command prints the same bytes every time.
Nothing here colours its output: the text goes to goldens and CI logs as it is.
"""

from __future__ import annotations

import io
import os
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from platform_testbed.sim.show.columns import columns_env
from platform_testbed.sim.show.text import one_line, printable

#: The width off a terminal when COLUMNS is not set: wide enough for the side-by-side
#: report in two blocks, narrow enough for a CI log pane (assumed; GitHub's is ~120).
DEFAULT_WIDTH = 100
#: Narrower than this nothing useful fits (a check name and a verdict): print at this.
MIN_WIDTH = 40
#: What rich draws a table at to measure its natural (unfolded) width.
_UNBOUNDED = 10_000
#: How far text sits under a label too wide to hang it beside (``wrap``).
_HANG = "    "


def width() -> int:
    """The width to print at: COLUMNS if set, else the terminal's, else DEFAULT_WIDTH."""
    given = columns_env()
    if given is not None:
        return max(MIN_WIDTH, given)
    try:
        if sys.stdout.isatty():
            return max(MIN_WIDTH, os.get_terminal_size(sys.stdout.fileno()).columns)
    except (OSError, ValueError, AttributeError):  # a replaced stdout (StringIO, closed)
        pass
    return DEFAULT_WIDTH


@dataclass(frozen=True)
class Table:
    """Cells for a person: a header and rows of strings; the first column labels each row."""

    header: Sequence[str]
    rows: Sequence[Sequence[str]]
    #: Columns (by index) aligned right: numbers.
    right: frozenset[int] = field(default_factory=frozenset)
    #: Columns whose cells may fold onto several lines (free text); the others never do.
    prose: frozenset[int] = field(default_factory=frozenset)
    #: False: no header line (a list whose title says what the columns are).
    headed: bool = True
    #: What the header's cells are (after ``header[0]``): the label column once transposed.
    across: str = ""

    def transposed(self) -> Table:
        """Rows become columns: the first column's cells are the new header."""
        header = [self.across, *(row[0] for row in self.rows)]
        rows = [[self.header[j], *(row[j] for row in self.rows)] for j in range(1, len(self.header))]
        # Numbers stay right-aligned when every value column held numbers.
        numbers = set(range(1, len(self.header))) <= self.right
        right = frozenset(range(1, len(header)) if numbers else ())
        return Table(header, rows, right, headed=self.headed, across=self.header[0])

    def columns(self, keep: Sequence[int]) -> Table:
        """The label column and the columns ``keep``, in that order."""
        chosen = [0, *keep]
        return Table(
            [self.header[j] for j in chosen],
            [[row[j] for j in chosen] for row in self.rows],
            frozenset(i for i, j in enumerate(chosen) if j in self.right),
            frozenset(i for i, j in enumerate(chosen) if j in self.prose),
            self.headed,
            self.across,
        )


class _Messages(Console):
    """A console whose messages are text, never markup, and one line each (``one_line``)."""

    def print(self, *objects: Any, **options: Any) -> None:
        """``Console.print``, each string given escaped by ``one_line``."""
        super().print(*(one_line(o) if isinstance(o, str) else o for o in objects), **options)


def stderr_console() -> Console:
    """The console for messages and progress bars on stderr.

    The messages carry paths and names from outside: with rich's defaults a ``[bold]`` in a
    path was read as markup and left out of the line that names the file, an ESC in it
    reached the terminal raw, and a long one was broken onto a second line at 80 columns
    (in a CI log too). Each message is one line, as long as it needs.
    """
    return _Messages(stderr=True, markup=False, emoji=False, highlight=False, soft_wrap=True)


def _rich(table: Table) -> RichTable:
    # Two spaces between columns (the box's blank divider and one of padding), none outside.
    drawn = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0),
                      show_header=table.headed)
    for j, title in enumerate(table.header):
        prose = j in table.prose
        # Every cell is one line: a name or a reason with a newline in it is escaped, not
        # a second row (prose folds by width only).
        drawn.add_column(Text(one_line(title)), justify="right" if j in table.right else "left",
                         no_wrap=not prose, overflow="fold" if prose else "ellipsis")
    for row in table.rows:
        drawn.add_row(*(Text(one_line(cell)) for cell in row))
    return drawn


def _draw(table: Table, at: int) -> list[str]:
    out = io.StringIO()
    console = Console(width=at, file=out, color_system=None, force_terminal=False,
                      force_jupyter=False, force_interactive=False, highlight=False,
                      markup=False, emoji=False, legacy_windows=False)
    console.print(_rich(table))
    return [line.rstrip() for line in out.getvalue().splitlines()]


def _natural(table: Table) -> int:
    """The table's width with no cell folded."""
    return max((len(line) for line in _draw(table, _UNBOUNDED)), default=0)


def _blocks(table: Table, at: int) -> list[Table]:
    """The columns split, left to right, into blocks that each fit ``at`` (at least one each).

    As few blocks as fit, then as even as fits: six columns in two blocks are three and
    three, not five and one.
    """
    greedy: list[list[int]] = [[]]
    for j in range(1, len(table.header)):
        if greedy[-1] and _natural(table.columns([*greedy[-1], j])) > at:
            greedy.append([])
        greedy[-1].append(j)
    columns = list(range(1, len(table.header)))
    size = -(-len(columns) // len(greedy))
    even = [columns[i:i + size] for i in range(0, len(columns), size)]
    if len(even) == len(greedy) and all(_natural(table.columns(g)) <= at for g in even):
        greedy = even
    return [table.columns(group) for group in greedy]


def fits(table: Table, at: int) -> bool:
    """Whether the table, drawn as it is, is at most ``at`` columns wide."""
    return _natural(table) <= at


def fit(table: Table, at: int | None = None, transpose: bool = True) -> str:
    """The table drawn within ``at`` columns (default: ``width()``), never wider.

    As drawn if it fits; else transposed if that fits (``transpose``); else a table with
    prose columns folds them; else blocks of columns, in the orientation needing fewer.
    """
    at = width() if at is None else at
    if _natural(table) <= at:
        return "\n".join(_draw(table, at))
    if table.prose:
        return _within(table, at)
    flipped = table.transposed() if transpose and table.rows else None
    if flipped is not None and _natural(flipped) <= at:
        return "\n".join(_draw(flipped, at))
    blocks = _blocks(table, at)
    if flipped is not None and len(other := _blocks(flipped, at)) < len(blocks):
        blocks = other
    return "\n\n".join(_within(block, at) for block in blocks)


def _within(table: Table, at: int) -> str:
    """Drawn within ``at`` with nothing lost; rich, short of room, cuts cells or drops columns.

    So the drawing is checked: as it is, then with every column folding, and last as a
    record per row (``header: value`` lines), which always fits.
    """
    for candidate in (table, _folding(table, at)):
        lines = _draw(candidate, at)
        if max((len(line) for line in lines), default=0) <= at and _ink(lines) >= _ink(
            [*(table.header if table.headed else ()), *(c for row in table.rows for c in row)]
        ):
            return "\n".join(lines)
    return "\n".join(_records(table, at))


def _folding(table: Table, at: int) -> Table:
    """Every column may fold: for a table no column order fits (one cell wider than the line).

    rich folds a word where the column ends, mid-word; a cell wider than the room its
    column can have is broken first at its hyphens and spaces (a check name in the header
    stays readable), and rich folds only what is still too wide.
    """
    cells = [list(table.header), *(list(row) for row in table.rows)]
    widest = [max(len(line) for row in cells for line in row[j].splitlines() or [""])
              for j in range(len(table.header))]

    def broken(j: int, cell: str) -> str:
        # The room column j has beside the others at their widest, two spaces apart.
        room = at - sum(w + 2 for k, w in enumerate(widest) if k != j)
        if len(cell) <= room or room < at // 4:
            return cell
        return "\n".join(textwrap.wrap(cell, width=room, break_on_hyphens=True)) or cell

    header, *rows = [[broken(j, cell) for j, cell in enumerate(row)] for row in cells]
    return Table(header, rows, table.right, frozenset(range(len(table.header))),
                 table.headed, table.across)


def _ink(texts: Sequence[str]) -> int:
    """Characters that carry content: no spaces, no rule lines."""
    return sum(len(t) - t.count(" ") - t.count("─") - t.count("\n") for t in texts)


def _records(table: Table, at: int) -> list[str]:
    """Each row as its label, then one ``header: value`` paragraph per other column."""
    lines: list[str] = []
    for row in table.rows:
        lines += wrap(row[0], at)
        for title, cell in zip(table.header[1:], row[1:], strict=True):
            lines += wrap(f"{title}: {cell}" if title else cell, at, "  ", "    ")
    return lines


def wrap(text: str, at: int | None = None, indent: str = "", hang: str | None = None) -> list[str]:
    """A paragraph as lines within ``at`` columns; ``hang`` indents the lines after the first.

    Words are never split at hyphens (check names stay whole); only a word longer than
    the line is broken. An indent wider than half the line (a label such as a long check
    name) would leave the text a sliver of a column, so the label gets lines of its own
    (broken at hyphens if it is wider than the line) and the text follows beneath it,
    four spaces in.
    """
    at = width() if at is None else at
    # Reasons, names and ids come from users' checks and recordings: escaped, never raw.
    # A label is one line (a check's name with a newline must not start a line of its
    # own); the text's line breaks are spaces, as textwrap makes them (descriptions).
    text, indent = printable(text), one_line(indent)
    hang = indent if hang is None else one_line(hang)
    if indent.strip() and max(len(indent), len(hang)) > at // 2:
        lead = indent[:len(indent) - len(indent.lstrip())]
        label = textwrap.wrap(indent.strip(), width=at, initial_indent=lead,
                              subsequent_indent=lead, break_on_hyphens=True)
        indent = hang = lead + _HANG
        return [*label, *textwrap.wrap(text, width=at, initial_indent=indent,
                                       subsequent_indent=hang, break_on_hyphens=False)]
    return textwrap.wrap(text, width=at, initial_indent=indent, subsequent_indent=hang,
                         break_on_hyphens=False) or [indent.rstrip()]


def counted(n: int, word: str, plural: str | None = None) -> str:
    """``1 run``, ``2 runs``: a count and its noun agreeing, not ``1 run(s)``."""
    return f"{n} {word if n == 1 else plural or word + 's'}"


def command(words: str, at: int | None = None, indent: str = "  ") -> list[str]:
    """A shell command within ``at`` columns, continued with `` \\`` so it still pastes.

    A word longer than a line (a deep path) is split with a bare ``\\`` and continued at
    the start of the next line, which the shell joins back into the one word.
    """
    at = width() if at is None else at
    lines: list[str] = []
    line = indent
    for whole in words.split():
        word = whole
        if line.strip() and len(line) + 1 + len(word) + 2 > at:
            lines.append(line + " \\")
            line = indent + "  "
        sep = " " if line.strip() else ""
        while len(line) + len(sep) + len(word) > at:  # only a word too long for any line
            room = max(1, at - len(line) - len(sep) - 1)
            lines.append(line + sep + word[:room] + "\\")
            line, sep, word = "", "", word[room:]
        line += sep + word
    return [*lines, line]
