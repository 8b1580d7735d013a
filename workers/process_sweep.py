"""Finding and ending what a child process left running, through ``/proc`` (Linux).

A child started in its own session (``start_new_session=True``) leads a process group
and a session whose ids are its pid. Killing the group misses a process that moved to
another group (``set -m`` job control, ``setpgid``) but stayed in the session; killing
the session as well misses only one that called ``setsid``, which a walk down the
parent links still finds while its parent lives. The workspace shell and the pool's
external stdio servers both sweep this way. Everywhere but Linux each finder returns
nothing: only the process group can be killed there.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterable
from typing import Final

__all__ = [
    "MAX_SWEEPS",
    "carrying",
    "descendants",
    "kill_pids",
    "kill_until_gone",
    "other_pids",
    "process_stats",
    "session_members",
]

MAX_SWEEPS: Final = 50
"""Most passes of `kill_until_gone` (each kills what it finds; a pass that finds nothing
ends it; more passes only matter against a fork bomb)."""


def other_pids() -> list[int]:
    """Every process id in ``/proc`` but this process's own; empty where there is none."""
    me = os.getpid()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    return [int(entry) for entry in entries if entry.isdigit() and int(entry) != me]


def process_stats() -> dict[int, tuple[int, int]]:
    """``pid -> (parent pid, session id)`` for every live process but this one (zombies
    left out); empty where there is no ``/proc``."""
    stats: dict[int, tuple[int, int]] = {}
    for pid in other_pids():
        try:
            with open(f"/proc/{pid}/stat") as file:
                # The command name may hold spaces and parentheses: split after the last ")".
                fields = file.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone, or unreadable
        if fields and fields[0] != "Z":
            stats[pid] = (int(fields[1]), int(fields[3]))
    return stats


def session_members(sid: int) -> list[int]:
    """The live processes of session ``sid`` (this process excepted)."""
    return [pid for pid, (_, session) in process_stats().items() if session == sid]


def descendants(pid: int) -> list[int]:
    """The live descendants of ``pid`` through parent links, whatever their session: a
    process that called ``setsid`` is found while its parent lives (not once it is
    orphaned and adopted by init)."""
    children: dict[int, list[int]] = {}
    for child, (parent, _) in process_stats().items():
        children.setdefault(parent, []).append(child)
    found: list[int] = []
    stack = list(children.get(pid, ()))
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(children.get(child, ()))
    return found


def carrying(entry: str) -> list[int]:
    """The other live processes whose environment holds ``entry`` (``NAME=value``):
    what one starter marked, found again however far its processes went."""
    needle = b"\0" + entry.encode() + b"\0"
    found: list[int] = []
    for pid in other_pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as file:
                environ = file.read()
        except OSError:  # gone, or not ours to read
            continue
        if needle in b"\0" + environ:
            found.append(pid)
    return found


def kill_pids(pids: Iterable[int]) -> int:
    """SIGKILL each of ``pids`` that still exists and is ours to kill; how many were."""
    killed = 0
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed += 1
    return killed


def kill_until_gone(find: Callable[[], Iterable[int]]) -> int:
    """SIGKILL what ``find`` returns, again and again until it returns nothing (so a
    process forked between two passes dies too); how many were killed."""
    killed = 0
    for _ in range(MAX_SWEEPS):
        pids = list(find())
        if not pids:
            break
        killed += kill_pids(pids)
    return killed
