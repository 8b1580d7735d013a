"""``execute_shell`` leaves nothing behind: the process group, and every process that left
it (job control, ``setsid``, double forks), are killed when the call ends, however it ends."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
import pytest
from test_workspace import ok, wait_gone

from nativemcp.proxy import WorkerPool
from nativemcp.workers import Server, ServerConfig
from nativemcp.workers.workspace import create_server

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
    pytest.mark.anyio_backends("asyncio"),
]


def _running(argv_tail: str) -> list[int]:
    """Live (not zombie) processes whose command line ends with ``argv_tail``."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                cmdline = file.read().replace(b"\0", b" ").decode(errors="replace").strip()
            with open(f"/proc/{entry}/stat") as file:
                state = file.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cmdline.endswith(argv_tail) and state != "Z":
            found.append(int(entry))
    return found


async def _none_left(argv_tail: str) -> None:
    with anyio.fail_after(10):
        for pid in _running(argv_tail):
            await wait_gone(pid)


@pytest.fixture
def server(tmp_path: Path) -> Server:
    return create_server(ServerConfig(workspace_root=tmp_path))


@pytest.fixture(autouse=True)
def _reap_leftovers() -> object:
    yield
    for tail in ("sleep 4321", "sleep 4322", "sleep 4323", "sleep 4324", "sleep 4325"):
        for pid in _running(tail):
            os.kill(pid, signal.SIGKILL)


async def test_a_detached_process_does_not_survive_the_call(server: Server) -> None:
    with anyio.fail_after(20):
        _, value = await ok(server, "execute_shell", command="(setsid sleep 4321 &); echo ok")
    assert value.exit_code == 0 and value.stdout == "ok\n"
    await _none_left("sleep 4321")


async def test_a_background_job_does_not_survive_a_call_that_exits_normally(
    server: Server,
) -> None:
    with anyio.fail_after(20):
        _, value = await ok(server, "execute_shell", command="sleep 4322 & echo started")
    assert not value.timed_out and value.exit_code == 0
    await _none_left("sleep 4322")


async def test_a_job_that_leaves_the_group_and_clears_its_environment_dies_with_the_session(
    server: Server,
) -> None:
    # Job control puts the job in a group of its own; `env -i` drops the call's marker.
    # It is still in the command's session, and that is how it is found.
    command = "bash -c 'set -m; env -i sleep 4325 &'; echo ok"
    with anyio.fail_after(20):
        _, value = await ok(server, "execute_shell", command=command)
    assert value.exit_code == 0 and value.stdout == "ok\n"
    await _none_left("sleep 4325")


async def test_a_double_forked_daemon_does_not_survive_a_timeout(server: Server) -> None:
    command = "(setsid sh -c 'sleep 4323 & sleep 4323' &); sleep 60"
    with anyio.fail_after(20):
        _, value = await ok(server, "execute_shell", command=command, timeout=0.5)
    assert value.timed_out
    await _none_left("sleep 4323")


@pytest.mark.real_process
async def test_a_detached_process_does_not_survive_the_call_in_a_worker(tmp_path: Path) -> None:
    async with WorkerPool(
        data_dir=tmp_path / "data", workspace_root=tmp_path, builtins=["workspace"], in_process=()
    ) as pool:
        ws = pool.server("workspace")
        with anyio.fail_after(20):
            result = await ws.execute_shell(command="(setsid sleep 4324 &); echo ok")
        assert result.stdout == "ok\n"
        await _none_left("sleep 4324")
