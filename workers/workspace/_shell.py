"""``execute_shell``: one command in the workspace root, bounded in time and output.

The command runs in a new session (its own process group). At the timeout the whole
group gets SIGKILL, so ``sleep 100 & wait`` dies with its children; the group is also
killed when the shell exits, so a background job cannot outlive the call or hold the
pipes open. A process can leave the group: one that stays in the session (``set -m``
job control) is found by its session id, and one that leaves the session too
(``setsid``, a double fork) by an environment marker unique to the call, which every
process the command starts inherits; on Linux both are found in ``/proc`` and killed.
(A process that both leaves the session and wipes its environment escapes; so does
everything on a platform without ``/proc``, where only the group is killed.) Both pipes are drained
the whole time (the child never blocks on a full pipe), but only the first
``max_output_bytes`` of each are kept.

The shell is not a sandbox: the command runs with the server's rights and can reach
outside the root. Deployments that must not allow that set ``shell_enabled = false``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
from pathlib import Path
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream

from ..process_sweep import carrying, kill_until_gone, session_members
from ._models import ShellResult

__all__ = ["render_shell", "run_shell"]

_DRAIN_GRACE: Final = 2.0
"""Seconds to wait for the pipes to close after the group is killed (a process that
left the group with ``setsid`` may still hold them)."""


class _Capture:
    """Keeps the first ``cap`` bytes of a stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.total = 0
        self.done = anyio.Event()

    async def drain(self, stream: ByteReceiveStream | None) -> None:
        try:
            if stream is None:
                return
            async for chunk in stream:
                self.total += len(chunk)
                room = self.cap - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self.done.set()

    def text(self) -> str:
        text = self.kept.decode("utf-8", "replace")
        if self.total > len(self.kept):
            text += (
                f"\n[output truncated: showing the first {len(self.kept)} of {self.total} bytes]"
            )
        return text


MARKER_VARIABLE: Final = "NATIVEMCP_SHELL_CALL"
"""The environment variable that marks every process one ``execute_shell`` call starts."""


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_left_behind(marker: str, sid: int) -> int:
    """SIGKILL every process of session ``sid`` or carrying ``marker`` in its environment,
    pass after pass until none is left; how many were killed.

    A killed process's environment reads empty once it exits, so it is not found again.
    """
    return kill_until_gone(lambda: {*carrying(marker), *session_members(sid)})


async def run_shell(
    command: str, *, cwd: Path, kill_after: float, max_output_bytes: int
) -> ShellResult:
    """Run ``command`` with ``/bin/sh`` in ``cwd``; kill its group after ``kill_after`` seconds."""
    out, err = _Capture(max_output_bytes), _Capture(max_output_bytes)
    timed_out = False
    marker = f"{MARKER_VARIABLE}={secrets.token_hex(16)}"
    env = {**os.environ, MARKER_VARIABLE: marker.partition("=")[2]}
    process = await anyio.open_process(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    # The child leads its own session, so its pid is its process group id.
    pgid = process.pid
    try:
        async with process, anyio.create_task_group() as tg:
            tg.start_soon(out.drain, process.stdout)
            tg.start_soon(err.drain, process.stderr)
            with anyio.move_on_after(kill_after) as scope:
                await process.wait()
            timed_out = scope.cancelled_caught
            _kill_group(pgid)
            await anyio.to_thread.run_sync(kill_left_behind, marker, pgid)
            await process.wait()
            with anyio.move_on_after(_DRAIN_GRACE):
                await out.done.wait()
                await err.done.wait()
            tg.cancel_scope.cancel()
    finally:
        # Also on cancellation of the call: nothing started here outlives it.
        _kill_group(pgid)
        kill_left_behind(marker, pgid)
    return ShellResult(
        command=command,
        exit_code=None if timed_out else process.returncode,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        truncated=out.total > len(out.kept) or err.total > len(err.kept),
        stdout_bytes=out.total,
        stderr_bytes=err.total,
    )


def render_shell(result: ShellResult) -> str:
    """The outcome, then each stream with its size in bytes (its text when not empty).

    A stream cut at the output cap says so in its own text, with the total it had.
    """
    if result.timed_out:
        head = f"$ {result.command}\nKilled at the timeout (the whole process group)."
    else:
        head = f"$ {result.command}\nExit code {result.exit_code}."
    parts = [head]
    for name, text, size in [
        ("stdout", result.stdout, result.stdout_bytes),
        ("stderr", result.stderr, result.stderr_bytes),
    ]:
        parts.append(f"{name} ({size} bytes):\n{text}" if text else f"{name}: empty ({size} bytes)")
    return "\n".join(parts)
