"""The workspace server reached through `WorkerPool`: in-process (its default) and in a worker."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import multiprocess
import pytest

from nativemcp.protocol import EmbeddedResource, TextContent, ToolError
from nativemcp.proxy import WorkerPool
from nativemcp.workers.workspace import ExportResult, ReadFileResult, ShellResult

pytestmark = pytest.mark.anyio


def outside_of(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("sentinel\n")
    return outside


@pytest.mark.real_process
async def test_workspace_tools_are_typed_and_sandboxed_in_a_real_worker(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = outside_of(tmp_path)
    with anyio.fail_after(30):
        async with WorkerPool(
            data_dir=tmp_path / "data", workspace_root=root, builtins=["workspace"], in_process=()
        ) as pool:
            ws = pool.server("workspace")
            await ws.write_file(path="docs/a.txt", content="hello\n워크스페이스\n")
            read = await ws.read_file(path="docs/a.txt", start_line=2)
            assert read == ReadFileResult(
                path="docs/a.txt",
                content="워크스페이스\n",
                start_line=2,
                end_line=2,
                total_lines=2,
                size=len("hello\n워크스페이스\n".encode()),
            )

            response = await ws.call_tool(
                "export_zip", {"files": ["docs/a.txt"], "package_name": "pkg"}
            )
            assert response.result is not None
            text, card = response.result.content
            assert isinstance(text, TextContent) and "with 1 file(s): docs/a.txt" in text.text
            assert isinstance(card, EmbeddedResource)
            assert card.resource.mime_type == "text/html"
            assert card.resource.uri.startswith("ui://nativemcp/export/zip/")
            export = await ws.export_file(path="docs/a.txt")
            assert isinstance(export, ExportResult)
            assert (root / export.export_path).read_bytes() == (
                root / "docs" / "a.txt"
            ).read_bytes()

            with pytest.raises(ToolError) as caught:
                await ws.read_file(path="../outside/secret.txt")
            assert caught.value.structured_content is not None
            assert caught.value.structured_content["rule"] == "parent_escape"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


@pytest.mark.real_process
async def test_a_shell_timeout_in_a_worker_kills_the_command_not_the_worker(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with WorkerPool(
            data_dir=tmp_path,
            workspace_root=tmp_path / "root",
            builtins=["workspace"],
            in_process=(),
        ) as pool:
            ws = pool.server("workspace")
            # `timeout` is the tool's own argument; the call's is `call_timeout`.
            killed = await ws.execute_shell(command="sleep 60", timeout=0.5)
            assert isinstance(killed, ShellResult) and killed.timed_out
            after = await ws.execute_shell({"command": "echo still serving"})
            assert after.stdout == "still serving\n" and after.exit_code == 0


async def test_the_pool_runs_the_workspace_in_process_by_default(tmp_path: Path) -> None:
    async with WorkerPool(data_dir=tmp_path, builtins=["workspace"]) as pool:
        ws = pool.server("workspace")
        # No worker process: the tool runs in this one.
        assert ws.backend == "BuiltInNative"
        assert multiprocess.active_children() == []
        pid = await ws.execute_shell(command="echo $PPID")
        assert int(pid.stdout) == os.getpid()
        await ws.write_file(path="x.txt", content="in process")
        assert (await ws.read_file(path="x.txt")).content == "in process"
        await ws.switch_context("other")
        with pytest.raises(ToolError, match="not_found"):
            await ws.read_file(path="x.txt")
    assert (tmp_path / "workspace" / "default" / "x.txt").read_text() == "in process"
