"""The documentation site (mkdocs.yml): the README as its front page, links that work on the site
and on GitHub, every page reachable, nothing fetched; `make test` builds it with --strict."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType, SimpleNamespace

import yaml

from tests.doc_blocks import ROOT

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
