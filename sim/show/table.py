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

from rich import box
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

#: The width off a terminal when COLUMNS is not set: wide enough for the side-by-side
#: report in two blocks, narrow enough for a CI log pane (assumed; GitHub's is ~120).
DEFAULT_WIDTH = 100
#: Narrower than this nothing useful fits (a check name and a verdict): print at this.
MIN_WIDTH = 40
#: What rich draws a table at to measure its natural (unfolded) width.
_UNBOUNDED = 10_000


def width() -> int:
    """The width to print at: COLUMNS if set, else the terminal's, else DEFAULT_WIDTH."""
    given = os.environ.get("COLUMNS", "").strip()
    if given.isdigit() and int(given) > 0:
        return max(MIN_WIDTH, int(given))
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


def _rich(table: Table) -> RichTable:
    # Two spaces between columns (the box's blank divider and one of padding), none outside.
    drawn = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0),
                      show_header=table.headed)
    for j, title in enumerate(table.header):
        prose = j in table.prose
        drawn.add_column(Text(title), justify="right" if j in table.right else "left",
                         no_wrap=not prose, overflow="fold" if prose else "ellipsis")
    for row in table.rows:
        drawn.add_row(*(Text(cell) for cell in row))
    return drawn


def _draw(table: Table, at: int) -> list[str]:
    console = Console(width=at, file=io.StringIO(), color_system=None, force_terminal=False,
                      force_jupyter=False, force_interactive=False, highlight=False,
                      markup=False, emoji=False, legacy_windows=False)
    console.print(_rich(table))
    out = console.file.getvalue()
    assert isinstance(out, str)
    return [line.rstrip() for line in out.splitlines()]


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
        return "\n".join(_draw(table, at))
    flipped = table.transposed() if transpose and table.rows else None
    if flipped is not None and _natural(flipped) <= at:
        return "\n".join(_draw(flipped, at))
    blocks = _blocks(table, at)
    if flipped is not None and len(other := _blocks(flipped, at)) < len(blocks):
        blocks = other
    return "\n\n".join("\n".join(_draw(_folding(block, at), at)) for block in blocks)


def _folding(table: Table, at: int) -> Table:
    """A block still wider than the line (one column too wide) folds its cells, not cut them."""
    if _natural(table) <= at:
        return table
    return Table(table.header, table.rows, table.right, frozenset(range(len(table.header))),
                 table.headed, table.across)


def wrap(text: str, at: int | None = None, indent: str = "", hang: str | None = None) -> list[str]:
    """A paragraph as lines within ``at`` columns; ``hang`` indents the lines after the first.

    Words are never split at hyphens (check names stay whole); only a word longer than
    the line is broken.
    """
    at = width() if at is None else at
    return textwrap.wrap(text, width=at, initial_indent=indent,
                         subsequent_indent=indent if hang is None else hang,
                         break_on_hyphens=False) or [indent.rstrip()]


def command(words: str, at: int | None = None, indent: str = "  ") -> list[str]:
    """A shell command within ``at`` columns, continued with `` \\`` so it still pastes."""
    at = width() if at is None else at
    lines = textwrap.wrap(words, width=at - 2, initial_indent=indent,
                          subsequent_indent=indent + "  ", break_long_words=False,
                          break_on_hyphens=False)
    return [line + " \\" for line in lines[:-1]] + lines[-1:]
