"""The documentation site (mkdocs.yml): the README as its front page, links that work on the site
and on GitHub, every page reachable, nothing fetched; `make test` builds it with --strict."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import yaml
from matplotlib.backends.backend_agg import FigureCanvasAgg

from platform_testbed.sim.config import scenario
from platform_testbed.sim.show.explore import detection_grid
from platform_testbed.sim.show.gridplot import detection_grid_figure
from tests.doc_blocks import PAGES, ROOT, page_name

#: The issue's bound for the front page (issue 31: it was 1,064 lines).
FRONT_PAGE_LINES = 350


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("site_hooks", ROOT / "docs" / "hooks" / "site.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SITE = _hooks()


def test_the_readme_is_a_front_page():
    """The README stays under 350 lines and points to every page of docs/ it hands on to."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < FRONT_PAGE_LINES
    for page in ("sept25.md", "checks.md", "cli.md", "your-check.md", "fidelity.md"):
        assert f"](docs/{page})" in text, page


def test_the_readme_links_become_the_sites():
    """On the front page, docs/X links to X, and a file the site does not carry becomes its path."""
    readme = ("[a](docs/sept25.md#x) ![f](docs/p.png) [e](examples/deploy/README.md) "
              "[w](https://simpy.readthedocs.io) [h](#what-it-is)")
    assert SITE._rewrite(readme, "README.md") == (
        "[a](sept25.md#x) ![f](p.png) e (`examples/deploy/README.md`) "
        "[w](https://simpy.readthedocs.io) [h](#what-it-is)")


def test_a_pages_links_to_the_readme_and_beside_it_stay_relative():
    """From a page of docs/, the README is the front page and pages keep their relative links."""
    page = "[r](../../README.md#install-with-pip) [s](crash-loop-publish.md) [t](../rollout.md)"
    assert SITE._rewrite(page, "docs/incidents/zero-502-deploys.md") == (
        "[r](../index.md#install-with-pip) [s](crash-loop-publish.md) [t](../rollout.md)")


def test_code_blocks_are_shown_as_written():
    """Links inside a fence are not rewritten; a block's file name becomes its title, a label goes."""
    text = "```python my_check.py\n[a](docs/x.md)\n```\n\n```sh quickstart\nmake demo\n```\n"
    assert SITE._rewrite(text, "README.md") == (
        '```python title="my_check.py"\n[a](docs/x.md)\n```\n\n```sh\nmake demo\n```\n')


def test_a_link_to_a_missing_file_outside_docs_warns(caplog):
    """A link the site does not publish is still checked: a missing file is a warning (--strict fails)."""
    SITE._rewrite("[gone](examples/nosuch.sh)", "README.md")
    assert "examples/nosuch.sh" in caplog.text


def test_every_page_of_docs_is_in_the_nav(tmp_path: Path):
    """A page mkdocs.yml's nav leaves out is listed under "More", never unreachable."""
    (tmp_path / "a.md").write_text("# A\n")
    (tmp_path / "new.md").write_text("# New\n")
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "notes.md").write_text("# not a page\n")
    config = SimpleNamespace(docs_dir=str(tmp_path), nav=[{"Home": "index.md"}, {"Pages": ["a.md"]}])
    SITE.on_config(config)
    assert config.nav[-1] == {"More": ["new.md"]}


def test_the_site_fetches_nothing():
    """Material's web fonts are off and only the local search plugin runs: no network at build or view."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["theme"]["font"] is False
    assert config["plugins"] == ["search"]


def test_the_detection_grid_cells_do_not_overlap():
    """The cap-vs-detection figure (10 caps, the checks with the longest layer names) draws no
    cell's text over another's, and wraps its panels (one row of six was 3331 px wide, labels
    overlapping)."""
    world = scenario.load("sept25-crash-loop", ["platform.events='minimal'", "platform.restart_delay_s=0.3",
                                                "platform.boot_s=0.4", "check.look_delay_s=10"])
    checks = ["count", "flyctl-smoke", "min-healthy-time"]
    figure = detection_grid_figure(detection_grid(world, range(1, 11), [2.0, 12.0], checks=checks))
    assert figure.get_size_inches()[0] <= 16
    canvas = FigureCanvasAgg(figure)
    canvas.draw()  # the constrained layout places the panels when drawn
    renderer = canvas.get_renderer()
    for ax in figure.axes:
        boxes = [t.get_window_extent(renderer) for t in ax.texts]
        assert len(boxes) == 20
        for i, box in enumerate(boxes):
            assert not any(box.overlaps(other) for other in boxes[i + 1:]), ax.texts[i].get_gid()


FENCED = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
HEADING = re.compile(r"^#{1,6} (.+?)#*[ \t]*$", re.M)
ANCHORED = re.compile(r"\]\(([^)\s#]*)#([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lowercased, punctuation dropped, each space a dash."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.replace("`", "")).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _prose(page: Path) -> str:
    """The page without its code: fenced blocks and inline code spans."""
    return re.sub(r"`+[^`\n]*`+", "", FENCED.sub("", page.read_text(encoding="utf-8")))


def _anchors(page: Path) -> set[str]:
    """Every anchor GitHub makes for the page's headings (a repeated one gets -1, -2, ...)."""
    made: dict[str, int] = {}
    anchors = set()
    for heading in HEADING.findall(FENCED.sub("", page.read_text(encoding="utf-8"))):
        slug = github_anchor(heading)
        anchors.add(f"{slug}-{made[slug]}" if slug in made else slug)
        made[slug] = made.get(slug, 0) + 1
    return anchors


def test_github_anchor_follows_githubs_rule():
    """Code spans keep their text, punctuation goes, spaces are not collapsed (GitHub's, not MkDocs')."""
    assert github_anchor("Against a real balancer (issue 23)") == "against-a-real-balancer-issue-23"
    assert github_anchor("As a row of `compare`") == "as-a-row-of-compare"
    assert github_anchor("crash period × look delay") == "crash-period--look-delay"


@pytest.mark.parametrize("page", PAGES, ids=[page_name(p) for p in PAGES])
def test_anchored_links_work_on_github(page: Path):
    """Each link to a heading (#anchor) names one GitHub makes, on its page or another (the site's
    anchors are checked by the strict build; GitHub's differ where a heading has × or a dash)."""
    for target, anchor in ANCHORED.findall(_prose(page)):
        if "://" in target:
            continue
        linked = (page.parent / target).resolve() if target else page
        assert anchor in _anchors(linked), f"{target}#{anchor}"
