"""The one routine that opens a file a tool was asked for by name: a regular file only.

The workspace sandbox and the content store's ``allowed_paths`` both open files named by
a model. Both need the same guarantees, so both come here:

- nothing but a regular file: no directory, device, FIFO or socket (a FIFO cannot even
  block the open: it is non-blocking), and no symlink at the last step (``O_NOFOLLOW``);
- the file opened is the file checked (same device and inode before and after the open);
- no hard links unless allowed: a second name for a file may lie outside the folders a
  tool may read, and reading or appending through the inside name would reach it.
"""

from __future__ import annotations

import os
import stat
from typing import Final, Literal

__all__ = ["READ_FLAGS", "UnsafeFile", "UnsafeRule", "check_regular", "open_regular"]

UnsafeRule = Literal["not_a_file", "symlink", "special_file", "hardlink", "changed"]
"""Why a file was refused."""

READ_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
)
"""Read-only, no symlink followed at the last step, and a FIFO never blocks the open."""


class UnsafeFile(Exception):
    """A file refused by `check_regular` or `open_regular`; ``rule`` says why."""

    def __init__(self, rule: UnsafeRule, reason: str) -> None:
        super().__init__(reason)
        self.rule: UnsafeRule = rule
        self.reason = reason


def check_regular(info: os.stat_result, *, allow_hardlinks: bool = False) -> None:
    """Refuse anything but a regular file with one name (or more, when allowed).

    Raises:
        UnsafeFile: a directory, symlink, special file, or a file with hard links.
    """
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        raise UnsafeFile("not_a_file", "it is a directory")
    if stat.S_ISLNK(mode):
        raise UnsafeFile("symlink", "it is a symlink")
    if not stat.S_ISREG(mode):
        raise UnsafeFile("special_file", "devices, FIFOs and sockets are refused")
    if info.st_nlink > 1 and not allow_hardlinks:
        raise UnsafeFile(
            "hardlink",
            f"the file has {info.st_nlink} hard links, and another name for it may lie "
            "outside the folders this tool may use (option allow_hardlinks)",
        )


def open_regular(
    name: str,
    *,
    dir_fd: int | None = None,
    flags: int = READ_FLAGS,
    allow_hardlinks: bool = False,
) -> tuple[int, os.stat_result]:
    """Open the regular file ``name`` (in ``dir_fd``); its descriptor and ``fstat``.

    The name is ``lstat``-ed first (opening some devices has side effects, even
    non-blocking), then opened without following a symlink, then checked again on the
    descriptor, which has the last word.

    Raises:
        UnsafeFile: not a regular file, hard-linked, or swapped between check and open.
        OSError: the file cannot be looked up or opened (missing, no permission, ...).
    """
    before = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    check_regular(before, allow_hardlinks=allow_hardlinks)
    fd = os.open(name, flags, 0o666, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        check_regular(info, allow_hardlinks=allow_hardlinks)
        if (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino):
            raise UnsafeFile("changed", "it changed while being opened")
    except BaseException:
        os.close(fd)
        raise
    return fd, info
