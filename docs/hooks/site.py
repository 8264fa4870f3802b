"""MkDocs hooks: the README is the site's front page, and links that leave docs/ still work.

The same Markdown reads on GitHub (links relative to each file, into the whole repository)
and on the site (only docs/ is published), so this hook rewrites links at build time:
the README's ``docs/X`` become ``X``, ``README.md`` becomes the front page, and a link to a
file the site does not carry (``examples/deploy/README.md``) becomes its path in code.
A page left out of ``nav`` is listed under "More", so a new page is never unreachable.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

LINK = re.compile(r"(?P<image>!?)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)", re.M)
NAMED = re.compile(r"\A(```|~~~)(\w+)[ \t]+([^\s{`\"][^\n`\"]*?)[ \t]*$", re.M)
ROOT = Path(__file__).resolve().parents[2]
HOOKS = "hooks/"
#: Under mkdocs' own logger, so `mkdocs build --strict` counts its warnings.
LOG = logging.getLogger("mkdocs.hooks.site")


def _rewrite(markdown: str, where: str) -> str:
    """Rewrite the relative links of a page found at ``where`` (a path from the repository root)."""
    def link(match: re.Match[str]) -> str:
        target = match.group("target")
        if "://" in target or target.startswith(("#", "mailto:")):
            return match.group(0)
        path, _, anchor = target.partition("#")
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(where), path))
        here = posixpath.dirname(posixpath.relpath(where, "docs")) if where.startswith("docs/") else ""
        if resolved == "README.md":
            inside = "index.md"
        elif resolved.startswith("docs/"):
            inside = resolved.removeprefix("docs/")
        else:
            if not (ROOT / resolved).exists():
                LOG.warning("Doc file '%s' contains a link '%s', but '%s' does not exist",
                            where, target, resolved)
            # Not published: the reader gets the path, to open in the repository.
            return f"{match.group('text')} (`{resolved}`)" if match.group("text") else f"`{resolved}`"
        relative = posixpath.relpath(inside, here or ".")
        return f"{match.group('image')}[{match.group('text')}]({relative}{'#' + anchor if anchor else ''})"

    def named(match: re.Match[str]) -> str:
        fence, kind, name = match.groups()
        return f'{fence}{kind} title="{name}"' if "." in name else f"{fence}{kind}"

    # Code blocks are shown as written: only the prose between fences is rewritten. A block's
    # name after its kind (```python my_check.py, read by tests/doc_blocks.py) is a file name
    # the highlighter shows as its title, or a label (```sh quickstart) left out.
    parts = re.split(r"(^(?:```|~~~).*?^(?:```|~~~)[ \t]*$)", markdown, flags=re.M | re.S)
    return "".join(NAMED.sub(named, p, count=1) if FENCE.match(p) else LINK.sub(link, p) for p in parts)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the README as the front page (index.md), and leave the hooks out of the site."""
    for file in [f for f in files if f.src_uri.startswith(HOOKS)]:
        files.remove(file)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "index.md", content=_rewrite(readme, "README.md")))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Rewrite the links of every page of docs/ that leave the published folder."""
    if page.file.src_uri == "index.md":
        return markdown
    return _rewrite(markdown, f"docs/{page.file.src_uri}")


def _named(nav: Any) -> set[str]:
    """Every page path ``nav`` names, at any depth."""
    if isinstance(nav, str):
        return {nav}
    if isinstance(nav, dict):
        return set().union(*(_named(v) for v in nav.values()))
    if isinstance(nav, list):
        return set().union(*(_named(v) for v in nav))
    return set()


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """List under "More" every page of docs/ that ``nav`` does not name."""
    docs = Path(config.docs_dir)
    pages = sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.md"))
    left_out = [p for p in pages if not p.startswith(HOOKS) and p not in _named(config.nav)]
    if config.nav is not None and left_out:
        config.nav.append({"More": left_out})
    return config
