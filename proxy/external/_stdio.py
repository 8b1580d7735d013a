"""The stdio transport to an external MCP server: its process, its stdout read tolerantly.

It stands in for the SDK's ``stdio_client`` (the official ``Client`` takes any transport)
for three reasons the SDK's does not cover:

- **A stray byte costs nothing.** Each stdout line is decoded on its own with
  replacement characters, so one non-UTF-8 byte neither kills the reader nor hides the
  lines after it. A line that is not JSON-RPC is skipped with one warning line naming
  the server, at most one per `JUNK_WARNING_INTERVAL` (with the count left out since).
- **A line has a limit.** A stdout line over the pool's ``max_frame`` (or that long
  without its newline yet) ends the connection, saying so, rather than growing a buffer
  without bound.
- **A dead reader is a crash.** When reading stops (end of stdout, or any failure), the
  read stream closes: the SDK fails every pending request at once, and ``ended`` tells
  the supervisor to restart the server by its policy. The SDK's reader instead drains
  stdout until the process exits, and its pending calls wait out their time limits.
  The server's exit ends the connection too (watched through a pidfd, Linux), even
  while a child it left holds its stdout open.
- **Nothing it started outlives it.** The server leads a new session. On close: stdin
  closed, a grace period, SIGTERM to its group, SIGKILL; then every process still in
  its session (one that left its group) and every descendant seen at close (one that
  left the session with ``setsid``, found through parent links while the server lived)
  is killed. A process that left the session and was orphaned before the close (a
  double fork whose parent exited) is out of reach: it no longer descends from the
  server. On Linux only (``/proc``); elsewhere the group is ended.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import AsyncIterator
from typing import IO, TYPE_CHECKING, Any, Final

import anyio
import anyio.abc

from nativemcp.protocol import describe_exit
from nativemcp.protocol.wire import DEFAULT_MAX_FRAME
from nativemcp.workers.process_sweep import descendants, kill_pids, kill_until_gone, session_members

from .._sdk_seam import close_subprocess_transport

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared.message import SessionMessage

    Streams = tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
    ]

__all__ = [
    "JUNK_WARNING_INTERVAL",
    "LineTooLong",
    "StdioLink",
    "hurry_stops",
    "stdio_transport",
]

_logger = logging.getLogger("nativemcp.external")

GRACE: Final = 2.0
"""Seconds a server has to exit after its stdin closes (the spec's first step)."""
TERM_GRACE: Final = 2.0
"""Seconds between SIGTERM and SIGKILL to the server's process group."""
EXIT_DRAIN: Final = 1.0
"""Seconds the reader has, after the server exited, to read what it wrote before."""
_POLL: Final = 0.01

_hurry = threading.Event()
"""Set once this process was told to end now (`hurry_stops`)."""


def hurry_stops() -> None:
    """End every stdio server of this process from now on without waiting out what is
    left of its `GRACE`: SIGTERM to its group at once, SIGKILL after `TERM_GRACE`.

    For a process whose own host gave it SIGTERM and a short while (the SDK's stdio
    client waits 2 s after closing stdin, then 2 s after SIGTERM): a server that does not
    exit on its closed stdin (npm's server-everything) is ended before this process is
    killed, instead of outliving it in a session of its own."""
    _hurry.set()


JUNK_WARNING_INTERVAL: Final = 10.0
"""Seconds between two warnings about lines on a server's stdout that are not JSON-RPC."""
_SHOWN_BYTES: Final = 80
"""Bytes of a junk line quoted in its warning."""


class StdioLink:
    """What the pool learns of one stdio connection: the process, and whether the
    connection ended (``ended``; `reason` says why: the end of stdout, the process's
    ``exit``, or the reader's ``failure``).
    """

    def __init__(self, server: str) -> None:
        self.server = server
        self.pid: int | None = None
        self.ended = anyio.Event()
        self.failure: str | None = None
        self.exit: str | None = None
        self._junk_warned: float | None = None
        self._junk_unreported = 0

    def reason(self) -> str:
        """Why the connection ended, in words."""
        # A failed reader comes first: the process may have been ended for it.
        if self.failure is not None:
            return f"reading its stdout failed ({self.failure})"
        if self.exit is not None:
            return f"its process {self.exit}"
        return "its stdout ended"

    def junk(self, line: bytes) -> None:
        """Report a line that is not JSON-RPC: one warning line, rate-limited."""
        now = time.monotonic()
        if self._junk_warned is not None and now - self._junk_warned < JUNK_WARNING_INTERVAL:
            self._junk_unreported += 1
            return
        since = (
            f" ({self._junk_unreported} more since the last warning)"
            if self._junk_unreported
            else ""
        )
        _logger.warning(
            "MCP server %r wrote a line that is not JSON-RPC to stdout, skipped%s: %r%s",
            self.server,
            since,
            line[:_SHOWN_BYTES],
            "..." if len(line) > _SHOWN_BYTES else "",
        )
        self._junk_warned, self._junk_unreported = now, 0


def _parse(line: bytes, link: StdioLink) -> SessionMessage | None:
    """One stdout line as a message; None (reported) for a line that is not one."""
    import mcp_types
    from mcp.shared.message import SessionMessage

    if not line.strip():
        return None
    try:
        text = line.decode("utf-8", "replace")
        message = mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError:
        link.junk(line)
        return None
    return SessionMessage(message)


class LineTooLong(ValueError):
    """A server wrote a stdout line over the frame limit."""


def _check_line(size: int, limit: int) -> None:
    """Refuse a line (or the part of one read so far) over ``limit`` bytes.

    Raises:
        LineTooLong: naming the size, the limit and what to do.
    """
    if size > limit:
        raise LineTooLong(
            f"it wrote a stdout line of over {limit} bytes (the frame limit, max_frame): "
            "raise max_frame, or ask the server for less"
        )


@contextlib.asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    *,
    env: dict[str, str] | None,
    cwd: str | None,
    errlog: IO[str],
    link: StdioLink,
    max_line: int = DEFAULT_MAX_FRAME,
) -> AsyncIterator[Streams]:
    """Start the server and yield the official client's streams to it. A stdout line
    over ``max_line`` bytes (the pool's ``max_frame``), or that long without a newline
    yet, ends the connection (`StdioLink.reason` says so): it is never buffered whole.

    Raises:
        OSError: the command cannot be started.
    """
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(
        [command, *args],
        env=get_default_environment() | (env or {}),
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        start_new_session=True,
    )
    link.pid = process.pid
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async with anyio.create_task_group() as tg:
        tg.start_soon(_read_stdout, process, read_send, link, max_line)
        tg.start_soon(_write_stdin, process, write_receive, read_send)
        with contextlib.suppress(OSError, AttributeError):  # no pidfd: stdout's end tells
            tg.start_soon(_watch_exit, process, os.pidfd_open(process.pid), link)
        try:
            yield read_receive, write_send
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process, write_send)
                for stream in (read_receive, read_send, write_receive):
                    await stream.aclose()
            tg.cancel_scope.cancel()


async def _read_stdout(
    process: anyio.abc.Process,
    read_send: MemoryObjectSendStream[SessionMessage | Exception],
    link: StdioLink,
    max_line: int,
) -> None:
    """Send each JSON-RPC line of the server's stdout to the session; the first line
    over ``max_line`` bytes, or any failure, ends the reading, and the connection."""
    assert process.stdout is not None
    pending = bytearray()
    try:
        async with read_send:
            async for chunk in process.stdout:
                *lines, rest = chunk.split(b"\n")
                if not lines:
                    pending += rest
                    _check_line(len(pending), max_line)
                    continue
                lines[0] = bytes(pending) + lines[0]
                pending = bytearray(rest)
                _check_line(max(len(pending), *map(len, lines)), max_line)
                for line in lines:
                    message = _parse(line, link)
                    if message is not None:
                        await read_send.send(message)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass  # our own close, or the session is gone
    except LineTooLong as exc:
        link.failure = str(exc)
    except Exception as exc:
        # Whatever stops the reading ends the connection: the server has crashed
        # for the pool (pending calls fail, the supervisor restarts it and logs why).
        link.failure = f"{type(exc).__name__}: {exc}"
    finally:
        link.ended.set()


async def _write_stdin(
    process: anyio.abc.Process,
    write_receive: MemoryObjectReceiveStream[SessionMessage],
    read_send: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    """Write the session's messages to the server's stdin, one line each, until either
    side ends; then end the read stream too."""
    assert process.stdin is not None
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        async with write_receive:
            async for message in write_receive:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send((data + "\n").encode("utf-8", "replace"))
    # Writing is over (closed, or the pipe broke): the session must see the end too.
    await read_send.aclose()


async def _watch_exit(process: anyio.abc.Process, pidfd: int, link: StdioLink) -> None:
    """End the connection once the server has exited (``pidfd`` turns readable), after
    a moment for what it wrote last."""
    try:
        await anyio.wait_readable(pidfd)  # readable once the process has exited
    finally:
        os.close(pidfd)
    # What it wrote before exiting is still in the pipe: the reader gets a moment
    # for it, and ends the connection itself unless a child holds stdout open.
    with anyio.move_on_after(EXIT_DRAIN):
        await link.ended.wait()
    if not link.ended.is_set():
        link.exit = describe_exit(process.returncode)
        link.ended.set()


async def _stop(process: anyio.abc.Process, write_send: Any) -> None:
    """Close stdin, wait out the grace, end the group, then whatever the server left."""
    # Seen while the server lives: descendants that left its session keep their
    # parent link only as long as their parent does.
    left_session = await anyio.to_thread.run_sync(_left_session, process.pid)
    pidfds = _pidfds(left_session)
    try:
        await write_send.aclose()
        if process.stdin is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await process.stdin.aclose()
        if not await _exited(process, GRACE, hurried=True):
            _signal_group(process.pid, signal.SIGTERM)
            if not await _exited(process, TERM_GRACE):
                _signal_group(process.pid, signal.SIGKILL)
                await _exited(process, TERM_GRACE)
        _signal_group(process.pid, signal.SIGKILL)  # what the server left in its group
        if pidfds:
            for fd in pidfds:
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
        else:
            kill_pids(left_session)
        await anyio.to_thread.run_sync(kill_until_gone, lambda: session_members(process.pid))
    finally:
        for fd in pidfds:
            os.close(fd)
        if process.stdout is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await process.stdout.aclose()
        close_subprocess_transport(process)


def _left_session(pid: int) -> list[int]:
    """The descendants of ``pid`` outside its session (they called ``setsid``)."""
    inside = set(session_members(pid))
    return [child for child in descendants(pid) if child not in inside]


def _pidfds(pids: list[int]) -> list[int]:
    """A pidfd per live pid: a handle a reused pid cannot redirect (Linux 5.3+)."""
    fds: list[int] = []
    if not hasattr(os, "pidfd_open") or not hasattr(signal, "pidfd_send_signal"):
        return fds
    for pid in pids:
        with contextlib.suppress(OSError):
            fds.append(os.pidfd_open(pid))
    return fds


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


async def _exited(process: anyio.abc.Process, timeout: float, *, hurried: bool = False) -> bool:
    """Whether the server exited within ``timeout`` (polled: ``wait()`` on asyncio also
    waits for the pipes, which a surviving child may hold open); ``hurried``: False as
    soon as `hurry_stops` was called."""
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            if hurried and _hurry.is_set():
                return False
            await anyio.sleep(_POLL)
        return True
    return False
