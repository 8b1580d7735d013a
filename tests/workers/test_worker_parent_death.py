"""A worker never outlives the process that started it, whatever the worker is running.

A real parent process starts a pool, has its worker block in a tool, and is killed with
SIGKILL: no shutdown message, no closed-channel handling can run, yet the worker must go.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _process import alive

pytestmark = [
    pytest.mark.real_process,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

_PARENT = """
import sys, anyio
from nativemcp.proxy import WorkerPool

async def main() -> None:
    async with WorkerPool(["_servers:server"], timeout=0, start_method=sys.argv[2]) as pool:
        testing = pool.server("testing")
        print(await testing.pid(), flush=True)
        await testing.block_inline(seconds=120, marker=sys.argv[1])

if __name__ == "__main__":  # spawned workers import this file too
    anyio.run(main)
"""

_ORPHAN_PARENT = """
import sys, anyio
from nativemcp.proxy import WorkerPool

async def main() -> None:
    async with WorkerPool(["_orphan_server:server"], timeout=0, start_method="spawn") as pool:
        await pool.server("orphan").disarm_and_block(seconds=120, marker=sys.argv[1])

if __name__ == "__main__":  # spawned workers import this file too
    anyio.run(main)
"""


def _wait_for(condition: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return bool(condition())  # type: ignore[operator]


def _start_parent(tmp_path: Path, code: str, *args: str) -> subprocess.Popen[str]:
    """Run ``code`` as a script in a process of its own that can import the test servers."""
    script = tmp_path / "parent.py"
    script.write_text(code)
    tests = str(Path(__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, str(script), *args], stdout=subprocess.PIPE, env=env, text=True
    )


def _kill_and_expect_worker_gone(parent: subprocess.Popen[str], worker_pid: int) -> None:
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(10)
    # The promise is "within a second"; the bound here allows a loaded machine.
    assert _wait_for(lambda: not alive(worker_pid), 10), "the worker outlived its parent"


def _clean_up(parent: subprocess.Popen[str], worker_pid: int) -> None:
    parent.kill()
    parent.wait(10)
    if parent.stdout is not None:
        parent.stdout.close()
    if worker_pid and alive(worker_pid):
        os.kill(worker_pid, signal.SIGKILL)


@pytest.mark.parametrize("start_method", ["spawn", "forkserver"])
def test_a_worker_exits_when_its_parent_is_killed_while_a_tool_blocks_it(
    tmp_path: Path, start_method: str
) -> None:
    marker = tmp_path / "blocking"
    parent = _start_parent(tmp_path, _PARENT, str(marker), start_method)
    worker_pid = 0
    try:
        assert parent.stdout is not None
        worker_pid = int(parent.stdout.readline())
        assert _wait_for(marker.exists, 60), "the worker never started blocking"
        # The inline tool holds the thread reading the calls for two minutes, so the
        # closed channel goes unseen: only a guard outside the reading can end the worker.
        _kill_and_expect_worker_gone(parent, worker_pid)
    finally:
        _clean_up(parent, worker_pid)


def test_the_watchdog_alone_ends_a_spawned_worker_whose_parent_is_killed(tmp_path: Path) -> None:
    """The watchdog thread's own exit, under spawn.

    A spawned worker is the child of the pool's process, so the kernel's parent-death
    signal ends it first and the watchdog is never the one that acts (under forkserver the
    signal waits on the forkserver, so the watchdog acts there). This worker clears the
    signal itself (`_orphan_server`: ``prctl(PR_SET_PDEATHSIG, 0)`` on its main thread,
    the thread that armed it; the setting is per thread) and then blocks its event loop,
    so the watchdog is the only guard left; no switch in the worker host, whose
    behaviour is unchanged. With `_watch_parent` broken (returning at once) the worker
    lives on and this test fails.
    """
    marker = tmp_path / "orphan.json"
    parent = _start_parent(tmp_path, _ORPHAN_PARENT, str(marker))
    worker_pid = 0
    try:
        assert _wait_for(marker.exists, 60), "the worker never started blocking"
        state = json.loads(marker.read_text())
        worker_pid = state["pid"]
        assert state["ppid"] == parent.pid, "the worker is not the pool process's own child"
        # SIGKILL read back on the thread that clears it: the signal is really gone.
        assert state["armed"] == signal.SIGKILL
        _kill_and_expect_worker_gone(parent, worker_pid)
    finally:
        _clean_up(parent, worker_pid)
