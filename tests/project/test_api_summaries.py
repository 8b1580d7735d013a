"""The API reference's summary tables show each docstring's first line: a sentence each.

mkdocstrings (``summary: true`` in mkdocs.yml) lists every public member of the four
reference pages with the first line of its docstring, cut there. A docstring whose first
sentence runs on to the next line shows as a sentence that stops in the middle. This
walks what those pages show (each package's ``__all__``, and the public members of its
classes, attribute docstrings included) and checks each first line ends a sentence.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nativemcp.protocol
import nativemcp.proxy
import nativemcp.proxy.llm
import nativemcp.workers

PAGES = [nativemcp.protocol, nativemcp.workers, nativemcp.proxy, nativemcp.proxy.llm]
ENDS = (".", "!", "?")


def _attribute_docstrings(body: list[ast.stmt]) -> Iterator[tuple[str, str]]:
    """``(name, docstring)`` of each assignment followed by a string, in ``body``."""
    for statement, following in itertools.pairwise(body):
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            name = statement.target.id
        elif (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            name = statement.targets[0].id
        else:
            continue
        if (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            yield name, inspect.cleandoc(following.value.value)


def _module_attributes(package: types.ModuleType) -> dict[str, str]:
    """Every module-level attribute docstring in the package's folder, by name."""
    found: dict[str, str] = {}
    assert package.__file__ is not None
    for path in sorted(Path(package.__file__).parent.glob("*.py")):
        found.update(_attribute_docstrings(ast.parse(path.read_text("utf-8")).body))
    return found


def _class_members(cls: type) -> Iterator[tuple[str, str | None]]:
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        if inspect.isfunction(value) or isinstance(value, property):
            yield name, inspect.getdoc(value)
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return
    [node] = ast.parse(source).body
    assert isinstance(node, ast.ClassDef)
    for name, doc in _attribute_docstrings(node.body):
        if not name.startswith("_"):
            yield name, doc


def _summaries() -> Iterator[tuple[str, str]]:
    """``(what, first line)`` of every docstring the reference pages summarize."""
    for page in PAGES:
        attributes = _module_attributes(page)
        for name in page.__all__:
            value: Any = getattr(page, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                if not value.__module__.startswith("nativemcp."):
                    continue
                doc = inspect.getdoc(value)
                if doc and value.__name__ == name:
                    yield f"{page.__name__}.{name}", doc.splitlines()[0]
                if inspect.isclass(value) and value.__name__ == name:
                    for member, member_doc in _class_members(value):
                        if member_doc:
                            yield f"{page.__name__}.{name}.{member}", member_doc.splitlines()[0]
            elif name in attributes:
                yield f"{page.__name__}.{name}", attributes[name].splitlines()[0]


SUMMARIES = dict(_summaries())


def test_the_walk_sees_the_reference_pages_members() -> None:
    # A walk that found nothing would pass the check below without checking anything.
    assert len(SUMMARIES) > 300
    assert "nativemcp.proxy.WorkerPool.call_tool" in SUMMARIES
    assert "nativemcp.workers.ServerConfig.database_url" in SUMMARIES  # an attribute
    assert "nativemcp.protocol.SERVICE_META_KEY" in SUMMARIES  # a module constant


@pytest.mark.parametrize("what", sorted(SUMMARIES))
def test_each_summary_line_is_a_whole_sentence(what: str) -> None:
    line = SUMMARIES[what].rstrip()
    assert line.endswith(ENDS), f"{what}: the summary stops mid-sentence: {line!r}"
