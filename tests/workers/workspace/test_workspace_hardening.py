"""Sandbox rules that close the last ways out: hard links, a symlink swapped during
resolve, long names, bursts of exports; and the content store's by-path reads."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import anyio
import pytest
from test_workspace import failure, ok

from nativemcp.workers import Server, ServerConfig
from nativemcp.workers.content_store import create_server as create_store_server
from nativemcp.workers.workspace import create_server

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("outside secret\n")
    return secret


@pytest.fixture
def root(tmp_path: Path, outside: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    os.link(outside, folder / "linked.txt")
    (folder / "plain.txt").write_text("plain\n")
    return folder


@pytest.fixture
def server(root: Path) -> Server:
    return create_server(ServerConfig(workspace_root=root))


async def test_a_hardlink_to_a_file_outside_cannot_be_read(server: Server) -> None:
    for tool in ("read_file", "download_file"):
        text, content = await failure(server, tool, path="linked.txt")
        assert content["rule"] == "hardlink", tool
        assert "outside secret" not in text and "2 hard links" in text


async def test_grep_skips_a_hardlinked_file(server: Server) -> None:
    _, value = await ok(server, "grep", pattern="secret|plain")
    assert [match.path for match in value.matches] == ["plain.txt"]


async def test_a_hardlink_to_a_file_outside_cannot_be_appended_to(
    server: Server, outside: Path
) -> None:
    _, content = await failure(
        server, "write_file", path="linked.txt", content="changed\n", mode="a"
    )
    assert content["rule"] == "hardlink"
    assert outside.read_bytes() == b"outside secret\n"  # noqa: ASYNC240


async def test_writing_a_hardlinked_file_whole_replaces_it_and_leaves_the_outside_alone(
    server: Server, root: Path, outside: Path
) -> None:
    await ok(server, "write_file", path="linked.txt", content="new inside\n")
    assert (root / "linked.txt").read_text() == "new inside\n"
    assert outside.read_text() == "outside secret\n"  # noqa: ASYNC240


async def test_the_allow_hardlinks_option_lets_them_through(root: Path) -> None:
    server = create_server(ServerConfig(workspace_root=root, options={"allow_hardlinks": True}))
    text, _ = await ok(server, "read_file", path="linked.txt")
    assert "outside secret" in text


async def test_a_symlink_swap_during_resolve_is_a_rule_without_host_paths(
    server: Server, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # realpath raises when a symlink loop is made or swapped while it walks the path;
    # the race is made certain here instead of hoped for.
    def racing(path: object, *args: object, **kwargs: object) -> str:
        raise OSError(errno.ELOOP, "Too many levels of symbolic links", str(path))

    # The sandbox (with its own realpath of the root) is made by the first call.
    await ok(server, "read_file", path="plain.txt")
    monkeypatch.setattr(os.path, "realpath", racing)
    text, content = await failure(server, "read_file", path="plain.txt")
    assert content["rule"] == "symlink_escape"
    assert str(root) not in text and str(root) not in str(content)


async def test_no_error_text_shows_the_host_root(server: Server, root: Path) -> None:
    (root / "dir").mkdir()
    os.symlink("/etc/passwd", root / "escape")
    probes = [
        ("read_file", {"path": "missing.txt"}),
        ("read_file", {"path": "dir"}),
        ("read_file", {"path": "escape"}),
        ("read_file", {"path": "../x"}),
        ("read_file", {"path": "/etc/passwd"}),
        ("read_file", {"path": "plain.txt/inner"}),
        ("write_file", {"path": "dir", "content": "x"}),
        ("list_directory", {"path": "plain.txt"}),
    ]
    for tool, arguments in probes:
        text, content = await failure(server, tool, **arguments)
        assert str(root) not in text and str(root.parent) not in text, (tool, arguments, text)
        assert content.get("rule"), (tool, arguments)


async def test_a_file_name_of_250_characters_can_be_written(server: Server, root: Path) -> None:
    name = "n" * 246 + ".txt"
    await ok(server, "write_file", path=name, content="long name\n")
    assert (root / name).read_text() == "long name\n"
    await ok(server, "write_file", path=name, content="again\n")
    assert (root / name).read_text() == "again\n"


async def test_many_exports_of_one_file_in_a_second_all_succeed(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One second, however long the exports take here: the clock is held still.
    still = time.gmtime()
    monkeypatch.setattr(time, "gmtime", lambda *_: still)
    paths: set[str] = set()
    with anyio.fail_after(60):
        for _ in range(150):
            _, value = await ok(server, "export_file", path="plain.txt")
            paths.add(value.export_path)
    assert len(paths) == 150


async def test_the_content_store_refuses_a_hardlinked_path(tmp_path: Path, root: Path) -> None:
    store_server = create_store_server(
        ServerConfig(data_dir=tmp_path / "data", options={"allowed_paths": [str(root)]})
    )
    created = (await store_server.call_tool("create_store", {"name": "s"})).structured_result
    assert created is not None
    response = await store_server.call_tool(
        "add_content", {"store_id": created.store_id, "path": str(root / "linked.txt")}
    )
    assert response.result is not None and response.result.is_error
    assert response.result.structured_content == {
        "code": "HARDLINK",
        "path": str(root / "linked.txt"),
    }
    ok_response = await store_server.call_tool(
        "add_content", {"store_id": created.store_id, "path": str(root / "plain.txt")}
    )
    assert ok_response.result is not None and not ok_response.result.is_error
    await store_server.aclose()
