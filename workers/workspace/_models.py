"""The typed results of the workspace tools (camelCase on the wire)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

__all__ = [
    "DirectoryEntry",
    "DownloadResult",
    "ExportResult",
    "ExportedFile",
    "GrepMatch",
    "GrepResult",
    "LineReplacement",
    "ListDirectoryResult",
    "ReadFileResult",
    "ReplaceLinesResult",
    "SearchFilesResult",
    "ShellResult",
    "WriteFileResult",
]


class _Result(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    pass


class ReadFileResult(_Result):
    """A file's text, or the requested line range of it."""

    path: str
    content: str
    start_line: int
    """First line returned (1-based); 0 for an empty file or range."""
    end_line: int
    """Last line returned (inclusive); 0 for an empty file or range."""
    total_lines: int
    size: int
    """The file's size in bytes."""


class WriteFileResult(_Result):
    """What `write_file` did."""

    path: str
    mode: Literal["w", "a"]
    bytes_written: int
    size: int
    """The file's size afterwards, in bytes."""
    created: bool


class DirectoryEntry(_Result):
    """One entry of a directory listing (symlinks are listed, never followed)."""

    name: str
    type: Literal["file", "directory", "symlink", "other"]
    size: int | None = None
    """Bytes, for files."""


class ListDirectoryResult(_Result):
    """A directory's entries: directories first, then by name."""

    path: str
    entries: list[DirectoryEntry]
    total: int
    truncated: bool


class SearchFilesResult(_Result):
    """Paths matching a glob, relative to the workspace root (directories end in '/')."""

    pattern: str
    path: str
    matches: list[str]
    truncated: bool


class GrepMatch(_Result):
    """One matching line."""

    path: str
    line: int
    """1-based line number."""
    text: str


class GrepResult(_Result):
    """The lines matching a regular expression, with files and line numbers."""

    pattern: str
    path: str
    matches: list[GrepMatch]
    files_matched: list[str]
    files_searched: int
    files_skipped: int
    """Binary, oversized, unreadable or special files, and symlinks (never followed)."""
    truncated: bool


class LineReplacement(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Replace lines ``start_line..end_line`` (inclusive) with ``new_content``.

    ``end_line`` defaults to ``start_line``; an empty ``new_content`` deletes the lines.
    """

    start_line: Annotated[int, msgspec.Meta(ge=1)]
    new_content: str
    end_line: Annotated[int, msgspec.Meta(ge=1)] | None = None


class ReplaceLinesResult(_Result):
    """What `replace_lines_in_file` changed."""

    path: str
    replacements: int
    lines_removed: int
    lines_added: int
    total_lines: int
    """The file's line count afterwards."""


class ShellResult(_Result):
    """A finished (or killed) shell command."""

    command: str
    exit_code: int | None
    """None when the command was killed at the timeout."""
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool
    """True when stdout or stderr exceeded the output cap."""
    stdout_bytes: int
    stderr_bytes: int


class ExportedFile(_Result):
    """A source file of an export."""

    path: str
    size: int


class ExportResult(_Result):
    """The facts of one export: what was exported, where it went, when."""

    kind: Literal["file", "zip"]
    uri: str
    """The export card's UIResource URI, ``ui://nativemcp/export/<kind>/<id>``."""
    export_path: str
    """Where the export lies, relative to the workspace root."""
    size: int
    """The export's size in bytes."""
    count: int
    files: list[ExportedFile]
    created_at: str
    """ISO 8601, UTC."""
    name: str
    """The display name (export_file) or the package name (export_zip)."""
    description: str | None = None


class DownloadResult(_Result):
    """A file sent to the host as a blob resource (the export card's download action)."""

    path: str
    uri: str
    """The resource URI, ``workspace:///<percent-encoded path>``."""
    mime_type: str
    size: int
