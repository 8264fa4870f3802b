"""docs/python-api.md runs as written, and so does the Python example of docs/timelines.md.

python-api.md's python blocks run in order in one namespace, in an empty directory; the
``text`` block after each is what it printed, compared exactly (``tests/doc_blocks.py``).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from tests.doc_blocks import blocks, run_python, same_text

ROOT = Path(__file__).resolve().parent.parent
API_DOC = ROOT / "docs" / "python-api.md"
TIMELINES_DOC = ROOT / "docs" / "timelines.md"


def test_every_python_block_of_the_api_doc_is_followed_by_its_output():
    """Each python block has a text block right after it: every example shows what it prints."""
    kinds = [kind for kind, _, _ in blocks(API_DOC)]
    assert kinds.count("python") >= 6
    assert set(kinds) == {"python", "text"}
    for index, kind in enumerate(kinds):
        if kind == "python":
            assert kinds[index + 1 : index + 2] == ["text"], f"python block {index} has no output"


def test_every_function_of_the_front_door_is_in_the_api_docs_table():
    """Each public function of sim.api, bar the test kit's, has its row in the doc's table."""
    from platform_testbed.sim import api  # noqa: PLC0415

    kit = {"assert_guarantee", "drive_world", "world", "worlds"}  # your-check.md's
    functions = {name for name in api.__all__
                 if inspect.isfunction(getattr(api, name)) and name not in kit}
    rows = set(re.findall(r"^\| `api\.(\w+)\(", API_DOC.read_text(encoding="utf-8"), re.M))
    assert functions == rows


def test_the_api_doc_prints_what_it_says(tmp_path, monkeypatch):
    """Run every python block in order; each prints exactly the text block below it."""
    pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "python_api_doc"}
    printed: str | None = None
    compared = 0
    for number, (kind, _, body) in enumerate(blocks(API_DOC)):
        if kind == "python":
            printed = run_python(body, namespace, f"{API_DOC.name}:block{number}")
        else:
            assert printed is not None, f"block {number}: a text block with no python above it"
            assert same_text(printed, body), f"block {number} printed:\n{printed}"
            printed = None
            compared += 1
    assert compared >= 6


def test_the_timelines_doc_python_example_draws_its_figures(tmp_path, monkeypatch):
    """docs/timelines.md's Python block runs as written and saves the figure it names."""
    pytest.importorskip("matplotlib")
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")  # no display in the test run
    monkeypatch.chdir(tmp_path)
    python = [body for kind, _, body in blocks(TIMELINES_DOC) if kind == "python"]
    assert len(python) == 1
    namespace: dict[str, object] = {"__name__": "timelines_doc"}
    run_python(python[0], namespace, f"{TIMELINES_DOC.name}:python")
    assert (tmp_path / "cap8.png").read_bytes().startswith(b"\x89PNG")
    assert namespace["ax"].figure is not None
    import matplotlib.pyplot as plt  # noqa: PLC0415

    plt.close("all")
