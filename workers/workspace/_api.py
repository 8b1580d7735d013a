"""`WorkspaceAPI`: the workspace server's tools as a typed interface for `WorkerPool.server`.

```python
ws = pool.server(WorkspaceAPI)
read = await ws.read_file(path="notes/a.txt", start_line=2)  # -> ReadFileResult
```

Each method mirrors one tool of `create_server` (same argument names, types and
defaults) and returns the tool's value type (a tool answering with
``NativeMCPResponse[T]`` returns ``T``). ``tests/workers/test_builtin_interfaces.py`` checks
the two stay the same.
"""

from __future__ import annotations

from typing import ClassVar, Literal, Protocol

from ._models import (
    DownloadResult,
    ExportResult,
    GrepResult,
    LineReplacement,
    ListDirectoryResult,
    ReadFileResult,
    ReplaceLinesResult,
    SearchFilesResult,
    ShellResult,
    WriteFileResult,
)

__all__ = ["WorkspaceAPI"]


class WorkspaceAPI(Protocol):
    """The ``workspace`` server as a typed proxy: ``pool.server(WorkspaceAPI)``."""

    server_name: ClassVar[str] = "workspace"

    async def read_file(
        self, *, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> ReadFileResult:
        """Read a UTF-8 text file, or lines ``start_line..end_line`` of it (1-based)."""

    async def write_file(
        self, *, path: str, content: str, mode: Literal["w", "a"] = "w"
    ) -> WriteFileResult:
        """Write (``"w"``) or append to (``"a"``) a text file; parent folders are created."""

    async def list_directory(self, *, path: str = ".") -> ListDirectoryResult:
        """List a directory's entries with their types and sizes."""

    async def search_files(
        self, *, pattern: str, path: str = ".", max_depth: int | None = None
    ) -> SearchFilesResult:
        """Find paths by glob."""

    async def grep(
        self,
        *,
        pattern: str,
        path: str = ".",
        ignore_case: bool = False,
        line_numbers: bool = True,
        max_results: int | None = None,
    ) -> GrepResult:
        """Search file contents with a regular expression."""

    async def replace_lines_in_file(
        self, *, path: str, replacements: list[LineReplacement]
    ) -> ReplaceLinesResult:
        """Replace line ranges of a file; an empty ``new_content`` deletes them."""

    async def execute_shell(self, *, command: str, timeout: float | None = None) -> ShellResult:
        """Run a shell command in the workspace root (killed after ``timeout`` seconds)."""

    async def export_file(
        self, *, path: str, display_name: str | None = None, description: str | None = None
    ) -> ExportResult:
        """Copy a file to ``exports/files/`` and show a download card."""

    async def export_zip(self, *, files: list[str], package_name: str) -> ExportResult:
        """Pack files into a zip under ``exports/packages/`` and show a download card."""

    async def download_file(self, *, path: str) -> DownloadResult:
        """Send a workspace file (an export) to the user as a download."""
