"""The 2026-07-28 Tasks extension across ``nativemcp serve --stateless`` replicas on one
PostgreSQL database: npm's server-everything behind each (its
``simulate-research-query`` declares task support and, for an ambiguous topic, asks the
client), raw 2026-07-28 requests in front. A task started through one replica is
polled, answered and cancelled through the other, and when the replica running a task
is killed (SIGKILL) the other says so: the task ends ``failed`` with an error naming
the lost replica. Needs Node and PostgreSQL (skipped without them, failed in CI)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from _node import everything_server
from _process import free_port, stop_all, wait_listening
from _scripts import venv_script
from _task_client import Rpc

from nativemcp.workers.process_sweep import descendants, kill_pids

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

RESEARCH = "simulate-research-query"  # one server served: its own names


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Every process a test starts, stopped (by its pid) after it."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    stop_all(started)


def _replica(tmp_path: Path, database_url: str, n: int) -> tuple[subprocess.Popen[bytes], str]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"everything": everything_server()}}))
    port = free_port()
    process = subprocess.Popen(
        [
            *(venv_script("nativemcp"), "serve", "--mcp-config", str(config)),
            *("--transport", "http", "--stateless", "--port", str(port)),
            *("--data-dir", str(tmp_path / f"replica{n}"), "--database-url", database_url),
        ],
        stdout=subprocess.DEVNULL,
    )
    wait_listening(port, process)
    return process, f"http://127.0.0.1:{port}/mcp"


async def test_a_task_is_answered_through_another_replica_and_fails_clearly_when_its_dies(
    tmp_path: Path, postgres_url: str, processes: list[subprocess.Popen[bytes]]
) -> None:
    first, one_url = _replica(tmp_path, postgres_url, 1)
    processes.append(first)
    second, two_url = _replica(tmp_path, postgres_url, 2)
    processes.append(second)
    ambiguous = {"name": RESEARCH, "arguments": {"topic": "tea", "ambiguous": True}}
    async with httpx2.AsyncClient(timeout=30) as http:
        one, two = Rpc(http, one_url), Rpc(http, two_url)
        with anyio.fail_after(120):
            created = await one.result("tools/call", ambiguous)
            task_id = created["taskId"]
            waiting = await two.until(task_id, "input_required")
            (key,) = waiting["inputRequests"]
            answer = {key: {"action": "accept", "content": {"interpretation": "historical"}}}
            await two.result("tasks/update", {"taskId": task_id, "inputResponses": answer})
            done = await two.until(task_id, "completed")

            stopped = await one.result("tools/call", ambiguous)
            await two.result("tasks/cancel", {"taskId": stopped["taskId"]})
            cancelled = await two.until(stopped["taskId"], "cancelled")

            orphan = await one.result("tools/call", ambiguous)
            await two.until(orphan["taskId"], "input_required")
            # SIGKILL leaves serve no way to end its stdio server (in a session of its
            # own): the test ends it, as an operator's supervisor would.
            left = descendants(first.pid)
            first.kill()
            first.wait()
            kill_pids(left)
            lost = await two.until(orphan["taskId"], "failed")
    assert "Research Report: tea (historical)" in done["result"]["content"][0]["text"]
    assert cancelled["status"] == "cancelled"
    assert "the replica running this task stopped" in lost["error"]["message"]
