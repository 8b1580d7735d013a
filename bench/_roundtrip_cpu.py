"""CPU time per call, caller plus worker: what throughput and cost depend on.

Wall-clock time per back-to-back call swings with how fast a VM wakes an idle vCPU;
CPU time does not. The caller's is `time.process_time` (every thread of this process,
at nanosecond precision); the worker's is its ``utime + stime`` from ``/proc/PID/stat``
(every thread, the ones that ended included; clock ticks, so the calls are many: a
20,000-call run of 10 µs each is 20 ticks).

With ``one_cpu`` the caller and the worker (every thread of both) run on one CPU while
they are measured. On a VM a wake-up across CPUs costs more than a small call, and
whether the two processes share a CPU is the scheduler's choice of the moment: free,
the same run gives 20 or 40 µs per raw-pipe call; on one CPU it gives the same figure
every time, and it counts the work of the call, a context switch included.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Final

__all__ = ["CPU_CALLS", "cpu_meter", "cpu_us_per_call", "one_cpu", "process_cpu_s", "tree_cpu_s"]

CPU_CALLS: Final = 20_000
"""Calls per CPU measurement."""
_TICK: Final = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """Seconds of CPU process ``pid`` has used so far, all its threads (Linux)."""
    with open(f"/proc/{pid}/stat") as stat:
        # The fields after the command name (which may hold spaces and parentheses);
        # utime and stime are fields 14 and 15 of the whole line.
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for tid in _threads(pid):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/children") as file:
            found += [int(child) for child in file.read().split()]
    return found


def tree_cpu_s(pid: int) -> float:
    """Seconds of CPU process ``pid`` and every process below it have used so far, as
    `process_cpu_s` (a server with worker processes: all of it). A process gone by the
    time it is read counts nothing, so the tree is read while it serves."""
    total = 0.0
    with contextlib.suppress(OSError):
        total += process_cpu_s(pid)
        for child in _children(pid):
            total += tree_cpu_s(child)
    return total


@contextlib.contextmanager
def cpu_meter(worker_pid: int) -> Iterator[list[float]]:
    """Seconds of CPU the caller and the worker used inside the block, summed: the one
    item of the list it yields, filled in when the block ends."""
    used: list[float] = []
    caller, worker = time.process_time(), process_cpu_s(worker_pid)
    yield used
    used.append(time.process_time() - caller + process_cpu_s(worker_pid) - worker)


def _threads(pid: int) -> list[int]:
    return [int(task) for task in os.listdir(f"/proc/{pid}/task")]


@contextlib.contextmanager
def one_cpu(pids: list[int]) -> Iterator[None]:
    """Run every thread of ``pids`` on one CPU (the first the first of them may use);
    their own CPU sets are restored after."""
    cpu = min(os.sched_getaffinity(pids[0]))
    saved = {tid: os.sched_getaffinity(tid) for pid in pids for tid in _threads(pid)}
    try:
        for tid in saved:
            os.sched_setaffinity(tid, {cpu})
        yield
    finally:
        for tid, cpus in saved.items():
            with contextlib.suppress(OSError):  # the thread ended meanwhile
                os.sched_setaffinity(tid, cpus)


async def cpu_us_per_call(
    call: Callable[[], Awaitable[object]],
    worker_pid: int,
    number: int = CPU_CALLS,
    *,
    one_cpu_only: bool = False,
) -> tuple[float, float]:
    """``(caller µs, worker µs)`` of CPU per call over ``number`` calls in a row (on one
    CPU with ``one_cpu_only``, see `one_cpu`)."""
    if one_cpu_only:
        with one_cpu([os.getpid(), worker_pid]):
            return await cpu_us_per_call(call, worker_pid, number)
    caller = time.process_time()
    worker = process_cpu_s(worker_pid)
    for _ in range(number):
        await call()
    caller = time.process_time() - caller
    worker = process_cpu_s(worker_pid) - worker
    return caller / number * 1e6, worker / number * 1e6
