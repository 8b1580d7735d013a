"""The pages a reader runs code from: the README (the front page) and every page of the
docs site under ``docs/``. The tests run their code blocks as written, by one rule for
every page (see ``tests/project/test_readme.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

# A fenced block with a language; a block without one (a drawing) is never run.
_BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)
# A line that includes a file (pymdownx.snippets, paths from the repository root): the
# site shows the file there, so the block is the file's text.
_INCLUDE = re.compile(r'^--8<-- "([^"]+)"\n', re.MULTILINE)


def _included(body: str) -> str:
    return _INCLUDE.sub(lambda found: (ROOT / found.group(1)).read_text("utf-8"), body)


def pages() -> list[Path]:
    """The README, then every Markdown page under ``docs/`` in path order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def page_name(page: Path) -> str:
    """The page's path from the repository root, as a test id and in messages."""
    return page.relative_to(ROOT).as_posix()


def blocks(page: Path, language: str) -> list[str]:
    """The bodies of the page's fenced blocks in ``language``, in order, with the files
    they include (``--8<-- "examples/sdk_client.py"``) in place, as the site shows them."""
    text = page.read_text("utf-8")
    return [_included(body) for lang, body in _BLOCK.findall(text) if lang == language]


def languages(page: Path) -> set[str]:
    """The languages of the page's fenced blocks."""
    return {lang for lang, _ in _BLOCK.findall(page.read_text("utf-8"))}


def unique_blocks(language: str) -> dict[str, str]:
    """Every block in ``language`` across the pages, once each, keyed ``page#number``.

    A block that stands on two pages as it is (the front page repeats a guide's example)
    is kept under the first page that has it: it runs once.
    """
    found: dict[str, str] = {}
    for page in pages():
        for number, body in enumerate(blocks(page, language)):
            if body not in found.values():
                found[f"{page_name(page)}#{number}"] = body
    return found


def page_text(relative: str) -> str:
    """The text of one page, by its path from the repository root."""
    return (ROOT / relative).read_text("utf-8")
