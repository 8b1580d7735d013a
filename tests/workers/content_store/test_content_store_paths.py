"""``add_content(path=...)`` reads only inside the ``allowed_paths`` option: off by
default, symlinks and ``..`` resolved before the check, NUL bytes and FIFOs refused."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from nativemcp.protocol import NativeMCPResponse, result_text, unwrap
from nativemcp.workers import Server, ServerConfig, load_server
from nativemcp.workers.content_store import AddContentResult, StoreInfo

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


SOURCE = "nativemcp.workers.content_store:create_server"
SECRET = "top secret sentinel 7f3a"


def make_server(data_dir: Path, **options: Any) -> Server:
    return load_server(SOURCE, ServerConfig(data_dir=data_dir, options=options))


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """``(root, secret)``: an allowed folder with a note, and a file outside it."""
    root = tmp_path / "allowed"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "note.md").write_text("# Note\nallowed text\n", encoding="utf-8")
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(SECRET, encoding="utf-8")
    return root, secret


@pytest.fixture
async def server(tmp_path: Path, layout: tuple[Path, Path]) -> AsyncIterator[Server]:
    srv = make_server(tmp_path / "data", allowed_paths=[layout[0]])
    yield srv
    await srv.aclose()


async def add_path(server: Server, path: str) -> NativeMCPResponse[Any]:
    with anyio.fail_after(5):
        created = unwrap(await server.call_tool("create_store", {"name": "docs"}), StoreInfo)
        return await server.call_tool("add_content", {"store_id": created.store_id, "path": path})


def refusal(response: NativeMCPResponse[Any]) -> tuple[str, dict[str, Any]]:
    """The text and structured content of an ``isError`` result."""
    assert response.error is None and response.result is not None
    assert response.result.is_error, result_text(response.result)
    text = result_text(response.result)
    assert SECRET not in text
    return text, dict(response.result.structured_content or {})


async def test_reading_by_path_is_disabled_by_default(
    tmp_path: Path, layout: tuple[Path, Path]
) -> None:
    srv = make_server(tmp_path / "data")
    try:
        text, content = refusal(await add_path(srv, str(layout[1])))
        assert "reading files by path is disabled" in text and "allowed_paths" in text
        assert str(layout[1]) in text and content["code"] == "PATH_NOT_ALLOWED"
        # Content still works.
        created = unwrap(await srv.call_tool("create_store", {}), StoreInfo)
        added = await srv.call_tool(
            "add_content", {"store_id": created.store_id, "content": "hello", "filename": "a.txt"}
        )
        assert unwrap(added, AddContentResult).line_count == 1
    finally:
        await srv.aclose()


async def test_a_file_inside_an_allowed_folder_is_read(
    server: Server, layout: tuple[Path, Path]
) -> None:
    root, _ = layout
    added = unwrap(await add_path(server, str(root / "sub" / "note.md")), AddContentResult)
    assert (added.filename, added.line_count) == ("note.md", 2)
    # `..` that stays inside the root is fine: the resolved path is what counts.
    again = await add_path(server, str(root / "sub" / ".." / "sub" / "note.md"))
    assert unwrap(again, AddContentResult).content_id


async def test_an_allowed_file_allows_only_itself(
    tmp_path: Path, layout: tuple[Path, Path]
) -> None:
    root, _ = layout
    note = root / "sub" / "note.md"
    (root / "sub" / "other.md").write_text("other\n")
    srv = make_server(tmp_path / "data", allowed_paths=[str(note)])
    try:
        assert unwrap(await add_path(srv, str(note)), AddContentResult).filename == "note.md"
        text, _ = refusal(await add_path(srv, str(root / "sub" / "other.md")))
        assert "Path not allowed" in text
    finally:
        await srv.aclose()


async def test_a_file_outside_the_allowed_folders_is_refused(
    server: Server, layout: tuple[Path, Path]
) -> None:
    root, secret = layout
    text, content = refusal(await add_path(server, str(secret)))
    assert "Path not allowed" in text and str(secret) in text and "allowed_paths" in text
    assert content == {"code": "PATH_NOT_ALLOWED", "path": str(secret)}
    # A sibling whose name merely starts with the root's is outside it too.
    sibling = root.parent / (root.name + "-evil")
    sibling.mkdir()
    (sibling / "x.txt").write_text("x")
    text, _ = refusal(await add_path(server, str(sibling / "x.txt")))
    assert "Path not allowed" in text
    # A missing file outside the roots is refused, not reported missing.
    text, _ = refusal(await add_path(server, "/nonexistent/secret.txt"))
    assert "Path not allowed" in text


async def test_a_symlink_inside_the_root_to_a_file_outside_is_refused(
    server: Server, layout: tuple[Path, Path]
) -> None:
    root, secret = layout
    (root / "link.txt").symlink_to(secret)
    (root / "outside-dir").symlink_to(secret.parent, target_is_directory=True)
    for path in (root / "link.txt", root / "outside-dir" / "secret.txt"):
        text, _ = refusal(await add_path(server, str(path)))
        assert "Path not allowed" in text and str(secret) in text


async def test_dotdot_escapes_are_refused(server: Server, layout: tuple[Path, Path]) -> None:
    root, _ = layout
    escape = f"{root}/sub/../../outside/secret.txt"
    text, _ = refusal(await add_path(server, escape))
    assert "Path not allowed" in text and escape in text
    text, _ = refusal(await add_path(server, f"{root}/../../../../../etc/passwd"))
    assert "Path not allowed" in text


async def test_a_nul_byte_is_refused(server: Server, layout: tuple[Path, Path]) -> None:
    text, content = refusal(await add_path(server, f"{layout[0]}/sub/note.md\x00.txt"))
    assert "NUL" in text and content["code"] == "INVALID_PATH"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
async def test_a_fifo_is_refused_without_blocking(
    server: Server, layout: tuple[Path, Path]
) -> None:
    fifo = layout[0] / "pipe"
    os.mkfifo(fifo)
    with anyio.fail_after(5):
        text, content = refusal(await add_path(server, str(fifo)))
    assert "not a regular file" in text and content["code"] == "NOT_A_FILE"


async def test_bad_allowed_paths_options_are_rejected(tmp_path: Path) -> None:
    for bad in ("/single/string", [""], ["/a\x00b"], [1]):
        with pytest.raises(ValueError, match="options"):
            make_server(tmp_path, allowed_paths=bad)


async def test_a_database_pool_size_below_one_is_rejected(tmp_path: Path) -> None:
    for bad in (0, -3):
        with pytest.raises(ValueError, match="database_pool_size must be 1 or more"):
            make_server(tmp_path, database_pool_size=bad)
