"""The file tools: read, write, list, glob search, grep and line replacement.

Each takes a `Sandbox` and returns a typed result; the ``render_*`` functions turn a
result into the text the model reads.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import stat
import time
from collections.abc import Sequence
from typing import Final, Literal

import regex

from nativemcp.protocol import ToolError

from ._grep_pattern import compile_pattern
from ._models import (
    DirectoryEntry,
    GrepMatch,
    GrepResult,
    LineReplacement,
    ListDirectoryResult,
    ReadFileResult,
    ReplaceLinesResult,
    SearchFilesResult,
    WriteFileResult,
)
from ._sandbox import BINARY_PROBE, Sandbox

__all__ = [
    "grep",
    "list_directory",
    "read_file",
    "render_grep",
    "render_list_directory",
    "render_read_file",
    "render_replace_lines",
    "render_search_files",
    "render_write_file",
    "replace_lines_in_file",
    "search_files",
    "write_file",
]

_MAX_LINE_CHARS: Final = 500
"""A grep match longer than this is cut (minified files would flood the model)."""


def _count(number: int, noun: str, plural: str | None = None) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {plural or noun + 's'}"


def _range_error(path: str, reason: str) -> ToolError:
    return ToolError(
        f"Invalid line range for {path!r}: {reason}",
        structured_content={"path": path, "rule": "line_range", "error": reason},
    )


# -- read_file ---------------------------------------------------------------------------


_LINE: Final = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
"""A line as editors and grep count them: ended by LF, CRLF or CR, nothing else.
``str.splitlines`` also ends a line at a form feed, U+0085, U+2028 and others, so a
source file with a form feed was numbered unlike in any editor, and a line edit changed
the line after the one the model named."""


def _lines(text: str) -> list[str]:
    """``text``'s lines (`_LINE`), each with its ending."""
    return _LINE.findall(text)


def _bare_lines(text: str) -> list[str]:
    """``text``'s lines (`_LINE`) without their endings."""
    return [line.rstrip("\r\n") for line in _LINE.findall(text)]


def read_file(
    sandbox: Sandbox, path: str, start_line: int | None, end_line: int | None
) -> ReadFileResult:
    """The UTF-8 text of ``path``, or lines ``start_line..end_line`` (1-based, inclusive)."""
    target = sandbox.resolve(path)
    text, size = sandbox.read_text(target)
    lines = _lines(text)
    total = len(lines)
    first = start_line or 1
    last = min(end_line if end_line is not None else total, total)
    if end_line is not None and end_line < first:
        raise _range_error(path, f"end_line {end_line} is before start_line {first}")
    if total and first > total:
        raise _range_error(path, f"start_line {first} is past the end (the file has {total} lines)")
    chosen = lines[first - 1 : last]
    return ReadFileResult(
        path=target.display,
        content="".join(chosen),
        start_line=first if chosen else 0,
        end_line=first + len(chosen) - 1 if chosen else 0,
        total_lines=total,
        size=size,
    )


def render_read_file(result: ReadFileResult) -> str:
    """A header, then the lines numbered like ``cat -n``."""
    if not result.total_lines:
        return f"{result.path} is empty (0 bytes)."
    whole = result.start_line == 1 and result.end_line == result.total_lines
    span = (
        f"all {result.total_lines} lines"
        if whole
        else f"lines {result.start_line}-{result.end_line} of {result.total_lines}"
    )
    numbered = [
        f"{number:>6}\t{line}"
        for number, line in enumerate(_bare_lines(result.content), result.start_line)
    ]
    return "\n".join([f"{result.path} ({span}, {result.size} bytes):", *numbered])


# -- write_file --------------------------------------------------------------------------


def write_file(
    sandbox: Sandbox, path: str, content: str, mode: Literal["w", "a"]
) -> WriteFileResult:
    """Write (``"w"``, replacing) or append (``"a"``) ``content`` as UTF-8."""
    target = sandbox.resolve(path)
    data = content.encode("utf-8")
    size, created = sandbox.write_bytes(target, data, mode=mode)
    return WriteFileResult(
        path=target.display, mode=mode, bytes_written=len(data), size=size, created=created
    )


def render_write_file(result: WriteFileResult) -> str:
    """One sentence: what was written where, and the size now."""
    verb = "Appended" if result.mode == "a" else "Wrote"
    new = " (new file)" if result.created else ""
    return (
        f"{verb} {result.bytes_written} bytes to {result.path}{new}; "
        f"the file is now {result.size} bytes."
    )


# -- list_directory ----------------------------------------------------------------------


def _entry(dir_fd: int, entry: os.DirEntry[str]) -> DirectoryEntry:
    info = os.stat(entry.name, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        return DirectoryEntry(name=entry.name, type="symlink")
    if stat.S_ISDIR(info.st_mode):
        return DirectoryEntry(name=entry.name, type="directory")
    if stat.S_ISREG(info.st_mode):
        return DirectoryEntry(name=entry.name, type="file", size=info.st_size)
    return DirectoryEntry(name=entry.name, type="other")


def list_directory(sandbox: Sandbox, path: str, max_entries: int) -> ListDirectoryResult:
    """The entries of the directory ``path``: directories first, then by name."""
    target = sandbox.resolve(path)
    with sandbox.open_directory(target) as dir_fd, os.scandir(dir_fd) as scan:
        entries = [_entry(dir_fd, entry) for entry in scan]
    entries.sort(key=lambda e: (e.type != "directory", e.name))
    return ListDirectoryResult(
        path=target.display,
        entries=entries[:max_entries],
        total=len(entries),
        truncated=len(entries) > max_entries,
    )


def render_list_directory(result: ListDirectoryResult) -> str:
    """A header, then one line per entry with its type in words (``src/  (directory)``,
    ``notes.md  (file, 75 bytes)``): a trailing ``/`` alone leaves a reader to infer
    the type, and a file to be told apart from a symlink by the missing slash."""
    if not result.entries:
        return f"{result.path} is empty."
    lines = [f"{result.path}: {_count(result.total, 'entry', 'entries')}"]
    for entry in result.entries:
        if entry.type == "directory":
            lines.append(f"  {entry.name}/  (directory)")
        elif entry.type == "file":
            lines.append(f"  {entry.name}  (file, {entry.size} bytes)")
        else:
            lines.append(f"  {entry.name}  ({entry.type})")
    if result.truncated:
        lines.append(f"  ... {result.total - len(result.entries)} more not shown")
    return "\n".join(lines)


# -- search_files ------------------------------------------------------------------------


def _matches(pattern: str, relative: str, name: str) -> bool:
    # A pattern without '/' matches names at any depth, like `find -name`.
    if "/" not in pattern:
        return fnmatch.fnmatchcase(name, pattern)
    return fnmatch.fnmatchcase(relative, pattern.removeprefix("./").removeprefix("**/")) or (
        pattern.startswith("**/") and fnmatch.fnmatchcase(name, pattern[3:])
    )


def search_files(
    sandbox: Sandbox, pattern: str, path: str, max_depth: int | None, limit: int
) -> SearchFilesResult:
    """Paths under ``path`` whose name (or, with '/', relative path) matches the glob."""
    target = sandbox.resolve(path)
    found: list[str] = []
    truncated = False
    for step in sandbox.walk(target, max_depth=max_depth):
        base = "" if step.directory == "." else step.directory + "/"
        from_search = "" if step.inner == "." else step.inner
        dirnames, filenames = step.dirnames, step.filenames
        for name, suffix in [(d, "/") for d in dirnames] + [(f, "") for f in filenames]:
            relative = f"{from_search}/{name}" if from_search else name
            if _matches(pattern, relative, name):
                if len(found) == limit:
                    truncated = True
                    break
                found.append(base + name + suffix)
        if truncated:
            break
    return SearchFilesResult(
        pattern=pattern, path=target.display, matches=sorted(found), truncated=truncated
    )


def render_search_files(result: SearchFilesResult) -> str:
    """A count, then the matching paths."""
    if not result.matches:
        return f"No paths under {result.path} match {result.pattern!r}."
    more = " (limit reached; narrow the pattern)" if result.truncated else ""
    head = (
        f"{_count(len(result.matches), 'path')} under {result.path} match {result.pattern!r}{more}:"
    )
    return "\n".join([head, *(f"  {match}" for match in result.matches)])


# -- grep --------------------------------------------------------------------------------


def _read_limited(fd: int, limit: int) -> bytes | None:
    try:
        if os.fstat(fd).st_size > limit:
            return None
        data = os.read(fd, limit + 1)
        return None if len(data) > limit else data
    finally:
        os.close(fd)


class _Grep:
    def __init__(
        self, pattern: regex.Pattern[str], limit: int, max_bytes: int, budget: float, start: float
    ) -> None:
        self.pattern = pattern
        self.limit = limit
        self.max_bytes = max_bytes
        self.budget = budget
        self.deadline = start + budget
        self.matches: list[GrepMatch] = []
        self.files_matched: list[str] = []
        self.searched = 0
        self.skipped = 0
        self.truncated = False

    def _too_slow(self, display: str, number: int) -> ToolError:
        where = f"{display} line {number}" if number else display
        reason = (
            f"the search took longer than its {self.budget:g} s budget "
            f"(option grep_timeout) and stopped at {where}"
        )
        return ToolError(
            f"grep {self.pattern.pattern!r} took too long: {reason}. Simplify the pattern "
            "(nested repeats such as (a+)+ backtrack catastrophically) or narrow the path.",
            structured_content={
                "pattern": self.pattern.pattern,
                "rule": "timeout",
                "error": reason,
                "path": display,
                "line": number,
            },
        )

    def scan(self, display: str, data: bytes | None) -> None:
        if time.monotonic() >= self.deadline:
            raise self._too_slow(display, 0)
        if data is None or b"\x00" in data[:BINARY_PROBE]:
            self.skipped += 1
            return
        self.searched += 1
        hit = False
        for number, line in enumerate(_bare_lines(data.decode("utf-8", "replace")), 1):
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise self._too_slow(display, number)
            try:
                found = self.pattern.search(line, timeout=left)
            except TimeoutError:
                raise self._too_slow(display, number) from None
            if found:
                if len(self.matches) == self.limit:
                    self.truncated = True
                    return
                hit = True
                text = line if len(line) <= _MAX_LINE_CHARS else line[:_MAX_LINE_CHARS] + "…"
                self.matches.append(GrepMatch(path=display, line=number, text=text))
        if hit:
            self.files_matched.append(display)

    def result(self, path: str) -> GrepResult:
        return GrepResult(
            pattern=self.pattern.pattern,
            path=path,
            matches=self.matches,
            files_matched=self.files_matched,
            files_searched=self.searched,
            files_skipped=self.skipped,
            truncated=self.truncated,
        )


def grep(
    sandbox: Sandbox, pattern: str, path: str, ignore_case: bool, limit: int, budget: float
) -> GrepResult:
    """Lines matching the regex ``pattern`` in the file ``path`` or the files under it.

    The whole call, matching included, gets ``budget`` seconds; past it the call fails
    with a ``timeout`` error naming the file and line where it stopped. An error rather
    than partial matches: a list cut short by time is easily taken for the whole answer.
    """
    start = time.monotonic()
    compiled = compile_pattern(pattern, ignore_case)
    state = _Grep(compiled, limit, sandbox.max_read_bytes, budget, start)
    target = sandbox.resolve(path)
    info = sandbox.lstat(target)
    if info is not None and stat.S_ISREG(info.st_mode):
        state.scan(target.display, sandbox.read_bytes(target))
        return state.result(target.display)
    # closing: a timeout raised mid-walk releases the walk's directory descriptors at once.
    with contextlib.closing(sandbox.walk(target)) as steps:
        for step in steps:
            base = "" if step.directory == "." else step.directory + "/"
            for name in step.filenames:
                fd = sandbox.open_regular_in(step.dir_fd, name)
                data = _read_limited(fd, state.max_bytes) if fd is not None else None
                state.scan(base + name, data)
                if state.truncated:
                    break
            if state.truncated:
                break
    return state.result(target.display)


def render_grep(result: GrepResult, line_numbers: bool = True) -> str:
    """A summary, then the matches grouped by file."""
    if not result.matches:
        return (
            f"No lines match {result.pattern!r} under {result.path} "
            f"({_count(result.files_searched, 'file')} searched, {result.files_skipped} skipped)."
        )
    more = " (limit reached; narrow the search)" if result.truncated else ""
    lines = [
        f"{_count(len(result.matches), 'match', 'matches')} for "
        f"{result.pattern!r} in {_count(len(result.files_matched), 'file')} under "
        f"{result.path}{more} ({result.files_searched} searched, {result.files_skipped} skipped):"
    ]
    current = None
    for match in result.matches:
        if match.path != current:
            current = match.path
            lines.append(match.path)
        lines.append(f"  {match.line}: {match.text}" if line_numbers else f"  {match.text}")
    return "\n".join(lines)


# -- replace_lines_in_file ---------------------------------------------------------------


def replace_lines_in_file(
    sandbox: Sandbox, path: str, replacements: Sequence[LineReplacement]
) -> ReplaceLinesResult:
    """Apply non-overlapping line-range replacements; empty content deletes the lines."""
    if not replacements:
        raise _range_error(path, "no replacements given")
    target = sandbox.resolve(path)
    text, _ = sandbox.read_text(target)
    lines = _lines(text)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    spans = sorted(
        ((r.start_line, r.end_line or r.start_line, r.new_content) for r in replacements),
        key=lambda span: span[0],
    )
    previous_end = 0
    for start, end, _ in spans:
        if end < start:
            raise _range_error(path, f"end_line {end} is before start_line {start}")
        if end > len(lines):
            raise _range_error(
                path, f"lines {start}-{end} are past the end (the file has {len(lines)} lines)"
            )
        if start <= previous_end:
            raise _range_error(path, f"the replacement at line {start} overlaps another")
        previous_end = end
    removed = added = 0
    # Bottom-up, so earlier line numbers stay valid while we splice.
    for start, end, content in reversed(spans):
        new_lines = _lines(content)
        if (
            new_lines
            and not new_lines[-1].endswith(("\n", "\r"))
            and lines[end - 1].endswith(("\n", "\r"))
        ):
            new_lines[-1] += newline
        removed += end - start + 1
        added += len(new_lines)
        lines[start - 1 : end] = new_lines
    sandbox.write_bytes(target, "".join(lines).encode("utf-8"), mode="w")
    return ReplaceLinesResult(
        path=target.display,
        replacements=len(spans),
        lines_removed=removed,
        lines_added=added,
        total_lines=len(lines),
    )


def render_replace_lines(result: ReplaceLinesResult) -> str:
    """One sentence: how many ranges, lines removed and added, the length now."""
    return (
        f"Applied {result.replacements} replacement(s) to {result.path}: "
        f"{result.lines_removed} line(s) removed, {result.lines_added} added; "
        f"the file now has {result.total_lines} lines."
    )
