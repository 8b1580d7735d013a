"""Code mode's limits and refusals, in a real Monty sandbox: each bad program ends with
an error that names what it did, and the pool goes on serving the next program.

The limit errors rely on Monty's words (``time limit exceeded``, ``memory limit
exceeded``, ...): these tests fail when a Monty release changes them.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest

from nativemcp.protocol import CodeError, CodeLimitExceeded, CodeSyntaxError, SandboxCrashed
from nativemcp.proxy import CallOptions, SyncWorkerPool, WorkerPool
from nativemcp.proxy.cli._errors import UsageError
from nativemcp.proxy.cli._profile import code_limits
from nativemcp.proxy.codemode import CodeLimits

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

TIGHT = CodeLimits(duration=2.0, memory=16 * 1024 * 1024, recursion=50, output=1000, calls=5)


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[WorkerPool]:
    async with WorkerPool(["_servers:server"], timeout=10) as pool:
        yield pool


async def _still_serves(pool: WorkerPool) -> None:
    # A tool's name read, not only called, is the tool too.
    result = await pool.run_code("echo = testing__echo\nawait echo(text='still here')")
    assert result.value == "still here"


REFUSED = pytest.mark.parametrize(
    ("code", "words"),
    [
        ("open('/etc/passwd').read()", "PermissionError"),
        ("import os\nos.listdir('/')", "PermissionError"),
        ("import socket", "No module named 'socket'"),
        ("import os\nos.system('true')", "os.system"),
        ("import subprocess", "No module named 'subprocess'"),
        ("import ctypes", "No module named 'ctypes'"),
        ("import os\nos.environ['HOME']", "'os.environ' is not supported"),
        ("import os\nos.getenv('HOME')", "'os.getenv' is not supported"),
    ],
    ids=["file", "folder", "socket", "os-system", "subprocess", "ctypes", "environ", "getenv"],
)


@REFUSED
async def test_a_program_cannot_reach_files_network_processes_or_the_environment(
    pool: WorkerPool, code: str, words: str
) -> None:
    with pytest.raises(CodeError, match=words):
        await pool.run_code(code, limits=TIGHT)
    await _still_serves(pool)


@pytest.fixture(scope="module")
def blocking_pool() -> Iterator[SyncWorkerPool]:
    with SyncWorkerPool(["_servers:server"], timeout=10) as pool:
        yield pool


@REFUSED
def test_a_blocking_pools_program_is_refused_the_same(
    blocking_pool: SyncWorkerPool, code: str, words: str
) -> None:
    # The blocking sandbox answers each call itself: an OS call gets Monty's refusal.
    with pytest.raises(CodeError, match=words):
        blocking_pool.run_code(code, limits=TIGHT)
    aliased = "echo = testing__echo\nawait echo(text='still here')"
    assert blocking_pool.run_code(aliased).value == "still here"


@pytest.mark.parametrize(
    ("code", "limit"),
    [
        ("while True:\n    pass", "duration"),
        ("x = [0] * 10**9", "memory"),
        ("blob = 'x' * 1000\nparts = []\nwhile True:\n    parts.append(blob * 100)", "memory"),
        ("def down(n):\n    return down(n + 1)\ndown(0)", "recursion"),
        ("while True:\n    print('flood flood flood')", "output"),
        ("for i in range(50):\n    await testing__echo(text=str(i))", "calls"),
        (
            "for i in range(50):\n    try:\n        await testing__echo(text='x')\n"
            "    except RuntimeError:\n        pass",
            "calls",
        ),
        ("await testing__sleepy(key='codemode-slow', seconds=30)", "duration"),
    ],
    ids=[
        "endless-loop",
        "memory-bomb",
        "growing-list",
        "deep-recursion",
        "print-flood",
        "too-many-calls",
        "too-many-calls-caught",
        "slow-tool",
    ],
)
async def test_a_program_past_a_limit_is_stopped_with_an_error_naming_it(
    pool: WorkerPool, code: str, limit: str
) -> None:
    with anyio.fail_after(30):
        with pytest.raises(CodeLimitExceeded) as caught:
            await pool.run_code(code, limits=TIGHT)
    assert caught.value.limit == limit
    assert caught.value.value == getattr(TIGHT, limit)
    assert limit in str(caught.value)
    await _still_serves(pool)


async def test_a_print_flood_keeps_what_fitted_and_drops_the_rest(pool: WorkerPool) -> None:
    with pytest.raises(CodeLimitExceeded) as caught:
        await pool.run_code("print('kept')\nwhile True:\n    print('y' * 100)", limits=TIGHT)
    output = caught.value.result.output
    assert output.startswith("kept\n")
    assert len(output.encode()) <= TIGHT.output


async def test_a_syntax_error_names_its_line_and_column(pool: WorkerPool) -> None:
    with pytest.raises(CodeSyntaxError) as caught:
        await pool.run_code("x = 1\ny = (x +\n")
    assert (caught.value.line, caught.value.column) >= (2, 1)
    assert f"line {caught.value.line}, column {caught.value.column}" in str(caught.value)
    with pytest.raises(CodeSyntaxError) as caught:
        await pool.run_code("print('a')\n  indented = 1")
    assert caught.value.line == 2
    await _still_serves(pool)


def _sandbox_pids() -> set[int]:
    """The pids of this process's children that run Monty's sandbox binary."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and b"monty" in cmdline:
            found.add(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the sandbox processes in /proc")
async def test_a_crashed_sandbox_process_fails_its_run_and_is_replaced(pool: WorkerPool) -> None:
    await _still_serves(pool)
    before = _sandbox_pids()
    assert before

    started = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        started.set()  # the program now waits on the tool: kill its sandbox

    async def run() -> None:
        options = CallOptions(on_progress=on_progress)
        with pytest.raises(SandboxCrashed, match="died") as caught:
            await pool.run_code("await testing__hang(key='codemode-crash')", options=options)
        assert [c.name for c in caught.value.result.calls] == ["testing__hang"]

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            for pid in before:
                os.kill(pid, signal.SIGKILL)
        await _still_serves(pool)
        # The tool call the dead program was waiting on was cancelled with it.
        answer = await pool.call_tool("testing__was_cancelled", {"key": "codemode-crash"})
        assert answer.structured_result is True
    assert not before & _sandbox_pids()


def test_the_interpreter_exits_cleanly_after_a_pool_ran_programs(tmp_path: Path) -> None:
    script = tmp_path / "program.py"
    script.write_text(
        textwrap.dedent(
            """
            import anyio
            from nativemcp.proxy import WorkerPool

            async def main() -> None:
                async with WorkerPool(["_servers:server"]) as pool:
                    result = await pool.run_code("await testing__echo(text='done')")
                    print(result.value)

            if __name__ == "__main__":
                anyio.run(main)
            """
        )
    )
    tests = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(tests)}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env
    )
    assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr
    assert "abort" not in done.stderr.lower()
    assert "panic" not in done.stderr.lower()


async def test_a_pools_code_limits_apply_to_a_run_that_names_none() -> None:
    async with WorkerPool(["_servers:server"], code_limits=CodeLimits(calls=1)) as limited:
        code = "await testing__echo(text='a')\nawait testing__echo(text='b')"
        with pytest.raises(CodeLimitExceeded) as caught:
            await limited.run_code(code)
        assert (caught.value.limit, caught.value.value) == ("calls", 1)
        # A run's own limits win.
        assert (await limited.run_code(code, limits=CodeLimits(calls=2))).value == "b"
    with pytest.raises(TypeError, match="CodeLimits"):
        WorkerPool(code_limits={"calls": 1})  # type: ignore[arg-type]


def test_the_command_lines_code_limits_are_checked() -> None:
    def given(*items: str, code_mode: bool = True) -> CodeLimits | None:
        return code_limits(argparse.Namespace(code_limit=list(items), code_mode=code_mode))

    assert given() is None
    assert given("calls=3", "duration=2.5") == CodeLimits(calls=3, duration=2.5)
    for bad, words in [
        (("size=3",), "the names are duration, memory"),
        (("calls=many",), "'many' is not a number"),
        (("calls=0",), "must be a positive number"),
    ]:
        with pytest.raises(UsageError, match=words):
            given(*bad)
    with pytest.raises(UsageError, match="add --code-mode"):
        given("calls=3", code_mode=False)
