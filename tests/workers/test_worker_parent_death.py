"""A worker never outlives the process that started it, whatever the worker is running.

A real parent process starts a pool, has its worker block its event loop in a sync
tool, and is killed with SIGKILL: no shutdown message, no closed-channel handling can
run, yet the worker must go.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _process import alive

pytestmark = [pytest.mark.real_process]

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


def _wait_for(condition: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return bool(condition())  # type: ignore[operator]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("start_method", ["spawn", "forkserver"])
def test_a_worker_exits_when_its_parent_is_killed_while_a_tool_blocks_it(
    tmp_path: Path, start_method: str
) -> None:
    marker = tmp_path / "blocking"
    script = tmp_path / "parent.py"
    script.write_text(_PARENT)
    tests = str(Path(__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}
    parent = subprocess.Popen(
        [sys.executable, str(script), str(marker), start_method],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    worker_pid = 0
    try:
        assert parent.stdout is not None
        worker_pid = int(parent.stdout.readline())
        assert _wait_for(marker.exists, 60), "the worker never started blocking"
        # The worker's event loop is blocked for two minutes: only a guard that does
        # not need the loop can end it.
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        # The promise is "within a second"; the bound here allows a loaded machine.
        assert _wait_for(lambda: not alive(worker_pid), 10), "the worker outlived its parent"
    finally:
        parent.kill()
        parent.wait(10)
        if parent.stdout is not None:
            parent.stdout.close()
        if worker_pid and alive(worker_pid):
            os.kill(worker_pid, signal.SIGKILL)
