"""grep under a time budget: a catastrophic regex times out with a clear error, in-process."""

from __future__ import annotations

import re
import time
import warnings
from pathlib import Path

import anyio
import pytest
from test_workspace import failure, ok

from nativemcp.workers import Server, ServerConfig
from nativemcp.workers.workspace import create_server

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


CATASTROPHIC = "(a+)+$"
"""Nested repeats: backtracking tries every split of the a's before failing on the 'b'."""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "a_plain.txt").write_text("hello\nneedle here\n")
    (folder / "b_evil.txt").write_text("fine\n" + "a" * 5000 + "b\nlast\n")
    return folder


@pytest.fixture
def server(root: Path) -> Server:
    return create_server(ServerConfig(workspace_root=root, options={"grep_timeout": 0.5}))


async def test_a_catastrophic_pattern_times_out_naming_file_and_line(server: Server) -> None:
    started = time.monotonic()
    with anyio.fail_after(20):
        text, content = await failure(server, "grep", pattern=CATASTROPHIC)
    assert time.monotonic() - started < 10
    assert text.startswith(f"grep {CATASTROPHIC!r} took too long:")
    assert "0.5 s budget (option grep_timeout) and stopped at b_evil.txt line 2" in text
    assert content["rule"] == "timeout"
    assert (content["path"], content["line"]) == ("b_evil.txt", 2)


async def test_the_server_keeps_serving_after_a_timeout(server: Server) -> None:
    with anyio.fail_after(20):
        await failure(server, "grep", pattern=CATASTROPHIC, path="b_evil.txt")
        _, value = await ok(server, "grep", pattern="needle")
        assert [(m.path, m.line) for m in value.matches] == [("a_plain.txt", 2)]
        _, value = await ok(server, "read_file", path="a_plain.txt")
        assert value.total_lines == 2


async def test_normal_patterns_are_unchanged(server: Server) -> None:
    # The catastrophic line is searched quickly by a linear pattern.
    _, value = await ok(server, "grep", pattern=r"^a+b$")
    assert [(m.path, m.line) for m in value.matches] == [("b_evil.txt", 2)]
    assert value.matches[0].text.endswith("…")  # long lines are still cut
    _, value = await ok(server, "grep", pattern="NEEDLE|last", ignore_case=True)
    assert [(m.path, m.line) for m in value.matches] == [("a_plain.txt", 2), ("b_evil.txt", 3)]
    _, value = await ok(server, "grep", pattern=r"(?P<w>l)(?P=w)o\b")  # re syntax
    assert [m.text for m in value.matches] == ["hello"]


async def test_the_budget_covers_the_whole_call(root: Path) -> None:
    server = create_server(ServerConfig(workspace_root=root, options={"grep_timeout": 1e-9}))
    text, content = await failure(server, "grep", pattern="needle")
    assert content["rule"] == "timeout" and content["path"] == "a_plain.txt"
    assert "took too long" in text


async def test_an_overlong_pattern_is_refused(server: Server) -> None:
    text, content = await failure(server, "grep", pattern="x" * 1001)
    assert "1001 characters; at most 1000 are accepted" in text
    assert content["rule"] == "pattern_too_long"
    # Accepted at the limit; searched in the plain file only: `regex` needs about half a
    # second for a 1,000-character literal over the evil file's 5,000-character line,
    # the whole 0.5 s budget of this fixture on a slow machine.
    await ok(server, "grep", pattern="x" * 1000, path="a_plain.txt")


@pytest.mark.parametrize(
    "pattern", ["((x{1000}){1000}){1000}", "(?:(?=x{1000})y){1000}", "(?:(x{1000})?){3000}"]
)
async def test_repeat_counts_that_would_stall_the_compiler_are_refused(
    server: Server, pattern: str
) -> None:
    with anyio.fail_after(20):
        text, content = await failure(server, "grep", pattern=pattern)
    assert content["rule"] == "pattern_too_complex" and "repeat counts multiply out" in text


async def test_deep_nesting_is_refused_not_crashed(server: Server) -> None:
    text, content = await failure(server, "grep", pattern="(" * 450 + "a" + ")" * 450)
    assert content["rule"] == "pattern_too_complex" and "nested too deeply" in text


async def test_syntax_beyond_python_re_is_an_invalid_pattern(server: Server) -> None:
    # regex would accept these; the tool keeps to Python's re.
    for pattern in [r"\p{L}", "(?|a)", r"(?r)a", r"\L<words>"]:
        _, content = await failure(server, "grep", pattern=pattern)
        assert content["rule"] == "regex"


@pytest.mark.parametrize(
    ("pattern", "line", "hit"),
    [
        ("x{e<=1}", "x{e<=1}", True),  # literal to re; fuzzy matching to regex
        ("x{e<=1}", "y", False),
        ("[[:alpha:]]", ":]", True),  # a class then ']' to re; a POSIX class to regex
        ("[^[:alpha:]]", "1", False),
        ("[]{]{2}", "]{", True),
        (r"\N{LATIN SMALL LETTER A}{2}", "aa", True),
        (r"a\{1}", "a{1}", True),
        ("a{,2}b{1,}c{2}", "aabcc", True),
    ],
)
async def test_patterns_mean_what_they_mean_to_python_re(
    root: Path, server: Server, pattern: str, line: str, hit: bool
) -> None:
    (root / "c.txt").write_text(line + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # re: "possible nested set"
        _, value = await ok(server, "grep", pattern=pattern, path="c.txt")
        assert bool(value.matches) is hit
        assert bool(re.search(pattern, line)) is hit
