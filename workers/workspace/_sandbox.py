"""The workspace sandbox: every path is relative to one root, and nothing leaves it.

A path is checked twice. First as text: absolute paths, drive letters, NUL bytes and
``..`` that climbs above the root are refused, and backslashes count as separators (so
``..\\..\\x`` is caught everywhere). Then against the disk: ``realpath`` must stay under
the root, so a symlink pointing out (one planted before the call, or a symlinked parent
directory) is refused. ``..`` is applied to the text before any symlink is looked at
(like ``os.path.normpath``), so ``link/..`` is the folder holding ``link``, never the
parent of wherever ``link`` points.

Between that check and the actual open, a hostile process could swap a directory for a
symlink. So nothing is opened by its full path: the file is reached from a descriptor of
the root, one component at a time, each with ``O_NOFOLLOW`` (``openat``). A swapped-in
symlink then fails the open instead of being followed. Before opening, the final
component is ``lstat``-ed and anything but a regular file is refused; the open itself
uses ``O_NONBLOCK``, so even a FIFO slipped in after the check cannot block the call,
and ``fstat`` on the open descriptor has the last word (the shared routine of
`nativemcp.workers._safe_open`).

Hard links: a regular file with more than one name is refused for reading and
appending (another of its names may lie outside the root, and the file is the same
file), unless the ``allow_hardlinks`` option is set. Writing a whole file (mode
``"w"``) replaces the name with a new file, so it never changes another name's file.

No error text holds a host path: refusals name the path as the caller gave it.

Every refusal is a `ToolError` whose text names the path and the rule, with
``{"path", "rule", "error"}`` as structured content.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import uuid
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final, Literal, NamedTuple

from nativemcp.protocol import ToolError

from .._safe_open import UnsafeFile, check_regular, open_regular

__all__ = ["BINARY_PROBE", "Resolved", "Rule", "Sandbox", "WalkStep", "sandbox_error"]

Rule = Literal[
    "empty_path",
    "nul_byte",
    "absolute_path",
    "drive_letter",
    "parent_escape",
    "symlink_escape",
    "not_found",
    "not_a_file",
    "not_a_directory",
    "special_file",
    "hardlink",
    "too_large",
    "not_text",
    "exists",
    "io_error",
]
"""The sandbox rules a refusal can name."""

_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS: Final = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
_DRIVE: Final = re.compile(r"^[A-Za-z]:")
_READ_CHUNK: Final = 1024 * 1024
BINARY_PROBE: Final = 8192
"""How much of a file is looked at for NUL bytes to call it binary (as grep does)."""


def sandbox_error(path: str, rule: Rule, reason: str) -> ToolError:
    """The refusal of ``path`` under ``rule``: an ``isError`` result for the model."""
    return ToolError(
        f"Refused {path!r}: {reason} (rule: {rule})",
        structured_content={"path": path, "rule": rule, "error": reason},
    )


class WalkStep(NamedTuple):
    """One directory of a `Sandbox.walk`."""

    directory: str
    """Relative to the root ('.' for the root)."""
    inner: str
    """Relative to the walked directory ('.' for itself)."""
    dirnames: list[str]
    filenames: list[str]
    dir_fd: int


@dataclass(frozen=True, slots=True)
class Resolved:
    """A checked path: what the caller asked for, and where it lands under the root."""

    requested: str
    """The path as given, for messages."""
    display: str
    """The path as normalized text, relative to the root ('.' for the root)."""
    parts: tuple[str, ...]
    """The symlink-free components under the root (empty for the root itself)."""

    @property
    def name(self) -> str:
        """The final component ('' for the root)."""
        return self.parts[-1] if self.parts else ""


def _lexical_parts(path: str) -> tuple[str, ...]:
    """``path`` checked as text and normalized; refusals name the rule."""
    if not path:
        raise sandbox_error(path, "empty_path", "the path is empty; use '.' for the root")
    if "\x00" in path:
        raise sandbox_error(path, "nul_byte", "the path contains a NUL byte")
    text = path.replace("\\", "/")
    if _DRIVE.match(text):
        raise sandbox_error(path, "drive_letter", "drive letters are not allowed")
    if text.startswith("/"):
        raise sandbox_error(
            path,
            "absolute_path",
            "absolute paths are not allowed; give a path relative to the workspace root",
        )
    parts: list[str] = []
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise sandbox_error(path, "parent_escape", "'..' leaves the workspace root")
            parts.pop()
        else:
            parts.append(part)
    return tuple(parts)


class Sandbox:
    """File access confined to ``root``, with size limits.

    Args:
        root: the workspace root (created if missing).
        max_read_bytes: the largest file read.
        max_write_bytes: the largest file written.
    """

    def __init__(
        self,
        root: Path,
        *,
        max_read_bytes: int,
        max_write_bytes: int,
        allow_hardlinks: bool = False,
    ) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = Path(os.path.realpath(root))
        self.max_read_bytes = max_read_bytes
        self.max_write_bytes = max_write_bytes
        self.allow_hardlinks = allow_hardlinks

    # -- checking --------------------------------------------------------------------

    def resolve(self, path: str) -> Resolved:
        """Check ``path`` and locate it under the root (it need not exist).

        Raises:
            ToolError: the path breaks a sandbox rule.
        """
        lexical = _lexical_parts(path)
        try:
            real = Path(os.path.realpath(self.root.joinpath(*lexical)))
        except (OSError, RuntimeError, ValueError) as exc:
            # A symlink swapped (or a loop made) while realpath walked the path. The
            # exception's own text holds the host path: it stays out of the message.
            raise sandbox_error(
                path,
                "symlink_escape",
                "the path changed while it was being resolved (a symlink swapped during the call)",
            ) from exc
        if real != self.root and not real.is_relative_to(self.root):
            raise sandbox_error(
                path,
                "symlink_escape",
                "the path resolves outside the workspace root through a symlink",
            )
        display = PurePosixPath(*lexical).as_posix() if lexical else "."
        return Resolved(requested=path, display=display, parts=real.relative_to(self.root).parts)

    def _os_error(self, target: Resolved, exc: OSError) -> ToolError:
        if isinstance(exc, FileNotFoundError):
            return sandbox_error(target.requested, "not_found", "no such file or directory")
        if isinstance(exc, NotADirectoryError):
            return sandbox_error(
                target.requested, "not_a_directory", "it, or a folder on its path, is not a folder"
            )
        if isinstance(exc, FileExistsError):
            return sandbox_error(target.requested, "exists", "the file already exists")
        if exc.errno == errno.ELOOP:
            # O_NOFOLLOW met a symlink the resolve step did not see: it appeared meanwhile.
            return sandbox_error(
                target.requested, "symlink_escape", "a symlink appeared in the path during the call"
            )
        # strerror only: str(exc) would show the host path of the file.
        return sandbox_error(target.requested, "io_error", exc.strerror or type(exc).__name__)

    # -- walking ---------------------------------------------------------------------

    def _open_dirs(self, parts: tuple[str, ...], *, create: bool) -> int:
        """A descriptor of the directory ``parts`` under the root, never following a link."""
        fd = os.open(self.root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        try:
            for part in parts:
                next_fd = _open_subdir(fd, part, create=create)
                os.close(fd)
                fd = next_fd
        except BaseException:
            os.close(fd)
            raise
        return fd

    @contextlib.contextmanager
    def open_directory(self, target: Resolved) -> Iterator[int]:
        """A descriptor of the directory ``target``, closed on exit.

        Raises:
            ToolError: missing, not a directory, or a symlink appeared on the way.
        """
        try:
            fd = self._open_dirs(target.parts, create=False)
        except OSError as exc:
            raise self._os_error(target, exc) from exc
        try:
            yield fd
        finally:
            os.close(fd)

    def _check_regular(
        self, target: Resolved, info: os.stat_result, *, hardlinks: bool | None = None
    ) -> None:
        try:
            check_regular(
                info, allow_hardlinks=self.allow_hardlinks if hardlinks is None else hardlinks
            )
        except UnsafeFile as exc:
            raise self._unsafe(target, exc) from None

    def _unsafe(self, target: Resolved, exc: UnsafeFile) -> ToolError:
        if exc.rule == "symlink":
            # resolve() saw no symlink here: it loops, or appeared during the call.
            return sandbox_error(
                target.requested,
                "symlink_escape",
                "it is a symlink that does not resolve "
                "inside the workspace (a loop, or one that appeared during the call)",
            )
        if exc.rule == "changed":
            return sandbox_error(
                target.requested,
                "symlink_escape",
                "it was swapped for another file during the call",
            )
        return sandbox_error(target.requested, exc.rule, exc.reason)

    def _too_large(self, target: Resolved, size: int, limit: int) -> ToolError:
        return sandbox_error(
            target.requested, "too_large", f"{size} bytes is over the limit of {limit} bytes"
        )

    # -- reading ---------------------------------------------------------------------

    def read_bytes(self, target: Resolved, *, limit: int | None = None) -> bytes:
        """The bytes of the regular file ``target``.

        Raises:
            ToolError: missing, not a regular file, over the size limit, or a rule broken.
        """
        limit = self.max_read_bytes if limit is None else limit
        if not target.parts:
            raise sandbox_error(target.requested, "not_a_file", "it is the workspace root")
        try:
            dir_fd = self._open_dirs(target.parts[:-1], create=False)
            try:
                fd, info = open_regular(
                    target.name, dir_fd=dir_fd, allow_hardlinks=self.allow_hardlinks
                )
            except UnsafeFile as exc:
                raise self._unsafe(target, exc) from None
            finally:
                os.close(dir_fd)
            try:
                if info.st_size > limit:
                    raise self._too_large(target, info.st_size, limit)
                chunks: list[bytes] = []
                total = 0
                while chunk := os.read(fd, _READ_CHUNK):
                    total += len(chunk)
                    if total > limit:  # the file grew while we read it
                        raise self._too_large(target, total, limit)
                    chunks.append(chunk)
                return b"".join(chunks)
            finally:
                os.close(fd)
        except OSError as exc:
            raise self._os_error(target, exc) from exc

    def read_text(self, target: Resolved) -> tuple[str, int]:
        """The UTF-8 text of ``target`` and its size in bytes.

        Raises:
            ToolError: as `read_bytes`, or the file is not UTF-8 text.
        """
        data = self.read_bytes(target)
        if b"\x00" in data[:BINARY_PROBE]:
            raise sandbox_error(
                target.requested, "not_text", "the file is binary (it has NUL bytes)"
            )
        try:
            return data.decode("utf-8"), len(data)
        except UnicodeDecodeError as exc:
            raise sandbox_error(
                target.requested,
                "not_text",
                f"the file is not UTF-8 text ({exc.reason} at byte {exc.start})",
            ) from exc

    def lstat(self, target: Resolved) -> os.stat_result | None:
        """``lstat`` of ``target``'s final component (None when it does not exist).

        Raises:
            ToolError: a parent is missing or not a directory, or a rule is broken.
        """
        if not target.parts:
            return os.stat(self.root)
        try:
            dir_fd = self._open_dirs(target.parts[:-1], create=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._os_error(target, exc) from exc
        try:
            return os.stat(target.name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._os_error(target, exc) from exc
        finally:
            os.close(dir_fd)

    # -- writing ---------------------------------------------------------------------

    def write_bytes(
        self,
        target: Resolved,
        data: bytes,
        *,
        mode: Literal["w", "a", "x"] = "w",
        limit: int | None = None,
    ) -> tuple[int, bool]:
        """Write ``data`` to ``target``, creating parent directories.

        ``"w"`` replaces the file atomically (a temporary file renamed over it), ``"a"``
        appends, ``"x"`` creates a new file and fails if one exists. Returns the file's
        size afterwards and whether the file was created.

        Raises:
            ToolError: over the size limit, an existing non-regular file, or a rule broken.
        """
        limit = self.max_write_bytes if limit is None else limit
        if not target.parts:
            raise sandbox_error(target.requested, "not_a_file", "it is the workspace root")
        if len(data) > limit:
            raise self._too_large(target, len(data), limit)
        try:
            dir_fd = self._open_dirs(target.parts[:-1], create=True)
            try:
                return self._write_in(dir_fd, target, data, mode, limit)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            raise self._os_error(target, exc) from exc

    def _write_in(
        self, dir_fd: int, target: Resolved, data: bytes, mode: str, limit: int
    ) -> tuple[int, bool]:
        name = target.name
        try:
            existing: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None:
            if mode == "x":
                raise FileExistsError(errno.EEXIST, "exists")
            # "w" replaces the name: a hard-linked file's other names keep their data.
            self._check_regular(target, existing, hardlinks=True if mode == "w" else None)
        if mode == "w":
            # Short whatever the name: a name near the 255-byte limit still gets one.
            temp = f".nmcp-{uuid.uuid4().hex[:16]}.tmp"
            fd = os.open(
                temp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC,
                0o666 if existing is None else stat.S_IMODE(existing.st_mode),
                dir_fd=dir_fd,
            )
            try:
                try:
                    _write_all(fd, data)
                finally:
                    os.close(fd)
                # rename replaces a name, never follows one: a symlink swapped in is replaced.
                os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=dir_fd)
                raise
            return len(data), existing is None
        flags = os.O_WRONLY | os.O_CREAT | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC
        flags |= os.O_APPEND if mode == "a" else os.O_EXCL
        fd = os.open(name, flags, 0o666, dir_fd=dir_fd)
        try:
            info = os.fstat(fd)
            self._check_regular(target, info)
            if info.st_size + len(data) > limit:
                raise self._too_large(target, info.st_size + len(data), limit)
            _write_all(fd, data)
            return info.st_size + len(data), existing is None
        finally:
            os.close(fd)

    def walk(
        self, target: Resolved, *, max_depth: int | None = None
    ) -> Generator[WalkStep, None, None]:
        """``os.fwalk`` under the directory ``target``, never following symlinks.

        Symlinks are listed among the files. Prune ``dirnames`` in place to skip
        subdirectories; ``max_depth=1`` lists ``target`` only (the directories at the
        depth limit are still listed, but not entered).

        Raises:
            ToolError: ``target`` is missing or not a directory.
        """
        with self.open_directory(target) as top_fd:
            for dirpath, dirnames, filenames, dir_fd in os.fwalk(
                ".", dir_fd=top_fd, follow_symlinks=False
            ):
                inner = PurePosixPath(dirpath).parts  # "./a/b" -> ("a", "b")
                dirnames.sort()
                filenames.sort()
                listed = dirnames
                if max_depth is not None and len(inner) + 1 >= max_depth:
                    listed = list(dirnames)
                    dirnames.clear()
                yield WalkStep(_join(target.parts + inner), _join(inner), listed, filenames, dir_fd)

    def open_regular_in(self, dir_fd: int, name: str) -> int | None:
        """A read descriptor of ``name`` in ``dir_fd`` if it is a regular file, else None.

        Symlinks, FIFOs and devices give None without being opened; so do hard-linked
        files unless allowed.
        """
        try:
            fd, _ = open_regular(name, dir_fd=dir_fd, allow_hardlinks=self.allow_hardlinks)
        except (OSError, UnsafeFile):
            return None
        return fd


def _open_subdir(dir_fd: int, name: str, *, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o777, dir_fd=dir_fd)
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except NotADirectoryError:
        # Linux answers ENOTDIR, not ELOOP, for a symlink under O_DIRECTORY|O_NOFOLLOW.
        if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise OSError(errno.ELOOP, "a symlink is in the path", name) from None
        raise


def _join(parts: tuple[str, ...]) -> str:
    return PurePosixPath(*parts).as_posix() if parts else "."


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
