"""Every notebook runs top to bottom and shows the figures it claims, as Jupyter would.

Executed with nbclient in a real kernel (what nbmake did, and what a reader's Jupyter
does), then the outputs are read: a cell that draws must have produced a PNG, so a
notebook that renders nothing (a non-interactive backend, a figure never displayed)
fails here instead of passing silently.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# A cell draws when it shows a figure explicitly or ends on one (the last line is a
# figure-valued expression: a plotting call, ``.figure``, or ``show(...)``).
DRAWS = re.compile(
    r"plt\.show\(\)|^(ax\.figure|fig|figure|show\(.*\)|\w*(timeline|timelines|figure)\w*\(.*\))\s*$",
    re.M,
)


def _draws(source: str) -> bool:
    lines = [line for line in source.strip().splitlines() if line.strip()]
    return bool(lines) and ("plt.show()" in source or bool(DRAWS.match(lines[-1])))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_and_every_drawing_cell_shows_a_figure(path: Path, tmp_path: Path) -> None:
    """No cell errors, and each cell that draws displays a PNG (the notebook has at least one)."""
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()
    images = 0
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        pngs = sum("image/png" in output.get("data", {}) for output in cell.outputs)
        images += pngs
        if _draws(cell.source):
            assert pngs, f"{path.name} cell {index} draws but displayed no figure"
    assert images >= 1, f"{path.name} displayed no figure at all"


# Where the notebooks are listed for readers: each must name every notebook there is (the README,
# the site's front page, points to docs/timelines.md for them).
LISTS = ("docs/timelines.md", "notebooks/README.md")


@pytest.mark.parametrize("doc", LISTS)
def test_docs_list_exactly_the_notebooks(doc: str) -> None:
    """Every notebooks/*.ipynb is named in the doc, and every notebook it names exists."""
    text = (ROOT / doc).read_text()
    for path in NOTEBOOKS:
        assert re.search(rf"`(notebooks/)?{re.escape(path.stem)}(\.ipynb)?`", text), (
            f"{doc} does not mention {path.name}"
        )
    named = set(re.findall(r"([A-Za-z0-9_]+)\.ipynb", text))
    assert named <= {p.stem for p in NOTEBOOKS}, f"{doc} names missing notebooks"
