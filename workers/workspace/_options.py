"""The workspace server's settings, read from ``ServerConfig.options``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

import msgspec

__all__ = ["MIB", "Locale", "WorkspaceOptions", "parse_options"]

MIB: Final = 1024 * 1024
"""One mebibyte; the size limits are whole multiples of it by default."""

Locale = Literal["en", "ko"]
"""The languages of the export status texts and cards."""

_Positive = Annotated[int, msgspec.Meta(gt=0)]
_Seconds = Annotated[float, msgspec.Meta(gt=0)]


class WorkspaceOptions(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """What a deployment may tune; every field has a safe default."""

    max_read_bytes: _Positive = 10 * MIB
    """The largest file `read_file`, `grep` and `replace_lines_in_file` will read."""
    max_write_bytes: _Positive = 10 * MIB
    """The largest file `write_file` and `replace_lines_in_file` will leave behind."""
    max_export_bytes: _Positive = 100 * MIB
    """The largest single export (a copied file, or a ZIP's total input)."""
    max_results: _Positive = 200
    """How many matches `grep` and `search_files` return when the call sets no limit."""
    grep_timeout: _Seconds = 5.0
    """The time budget of one `grep` call, matching included, in seconds."""
    max_entries: _Positive = 1000
    """How many entries `list_directory` returns."""
    max_output_bytes: _Positive = 64 * 1024
    """How much of each of stdout and stderr `execute_shell` keeps."""
    default_shell_timeout: _Seconds = 30.0
    """The `execute_shell` timeout when the call sets none, in seconds."""
    max_shell_timeout: _Seconds = 600.0
    """The longest timeout a call may ask for, in seconds."""
    shell_enabled: bool = True
    """False turns `execute_shell` into an error (the shell is not sandboxed)."""
    allow_hardlinks: bool = False
    """True lets tools read and append to files with more than one hard link (another
    name of such a file may lie outside the root; off by default)."""
    locale: Locale = "en"
    """The language of the export texts and cards."""
    download_tool: str = "download_file"
    """The tool an export card's download button asks the host to call with ``{path}``."""


def parse_options(options: Mapping[str, Any]) -> WorkspaceOptions:
    """Validate ``options`` into `WorkspaceOptions`.

    Raises:
        ValueError: an unknown key (a typo would otherwise be ignored) or a bad value.
    """
    try:
        return msgspec.convert(dict(options), WorkspaceOptions)
    except msgspec.ValidationError as exc:
        raise ValueError(f"invalid workspace options: {exc}") from exc
