"""The workspace server's definition: its tools, resources and session folders
(`create_server`); the package docstring says what it does."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Annotated, Final, Literal
from urllib.parse import quote, unquote

import msgspec

from nativemcp.protocol import (
    NativeMCPResponse,
    ResourceContents,
    ToolAnnotations,
    ToolError,
    structured_response,
)
from nativemcp.workers import FeatureError, Resource, Server, ServerConfig

from . import _exports, _files
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
from ._options import WorkspaceOptions, parse_options
from ._sandbox import Sandbox
from ._shell import render_shell, run_shell

__all__ = ["DEFAULT_SESSION", "EXPORT_TEMPLATE", "create_server"]

DEFAULT_SESSION: Final = "default"
"""The session whose folder is used until the host switches context."""

_SAFE_SESSION: Final = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")
_READ_ONLY: Final = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_WRITES: Final = ToolAnnotations(destructive_hint=True, open_world_hint=False)
_ADDS: Final = ToolAnnotations(destructive_hint=False, open_world_hint=False)

_Line = Annotated[int, msgspec.Meta(ge=1)]
_Limit = Annotated[int, msgspec.Meta(ge=1)]


def _session_folder(session_id: str) -> str:
    """A folder name for ``session_id`` that can never climb out of its parent."""
    if _SAFE_SESSION.fullmatch(session_id):
        return session_id
    return "s-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]


class _Workspace:
    """Which root the calls use: the fixed one, or the current session's folder."""

    def __init__(self, config: ServerConfig, options: WorkspaceOptions) -> None:
        if config.workspace_root is None and config.data_dir is None:
            raise ValueError("the workspace server needs a workspace_root or a data_dir")
        self._fixed = config.workspace_root
        self._sessions = (config.data_dir or Path()) / "workspace"
        self._options = options
        self._session = DEFAULT_SESSION
        self._sandbox: Sandbox | None = None

    def switch(self, session_id: str | None) -> None:
        session = session_id or DEFAULT_SESSION
        if self._fixed is None and session != self._session:
            self._session = session
            self._sandbox = None

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            root = self._fixed or self._sessions / _session_folder(self._session)
            self._sandbox = Sandbox(
                root,
                max_read_bytes=self._options.max_read_bytes,
                max_write_bytes=self._options.max_write_bytes,
                allow_hardlinks=self._options.allow_hardlinks,
            )
        return self._sandbox


EXPORT_TEMPLATE: Final = "workspace:///exports/{kind}/{name}"
"""Each exported file is a resource at this URI (``kind``: files or packages)."""

_SERVICE_CONTEXT: Final = (
    "You have a workspace folder. Every path you give the workspace tools is relative "
    "to its root; absolute paths, '..' above the root and symlinks leading out are "
    "refused. execute_shell runs with the root as its working directory. Exported "
    "files land under exports/."
)


class _Tools:
    """The workspace tools, on the current sandbox and the options.

    Each public method is a tool, resource or lister (its docstring is the description);
    `create_server` lists them in the order ``tools/list`` shows them.
    """

    def __init__(self, workspace: _Workspace, options: WorkspaceOptions) -> None:
        self.workspace = workspace
        self.options = options

    # -- files -----------------------------------------------------------------------

    def read_file(
        self, path: str, start_line: _Line | None = None, end_line: _Line | None = None
    ) -> ReadFileResult:
        """Read a UTF-8 text file, or lines start_line..end_line of it (1-based, inclusive).

        Open, view or print a file of the project folder, or a few of its lines.
        """
        return _files.read_file(self.workspace.sandbox, path, start_line, end_line)

    def write_file(self, path: str, content: str, mode: Literal["w", "a"] = "w") -> WriteFileResult:
        """Write a text file (mode "w" replaces it, "a" appends); parent folders are created.

        Save, create or overwrite a file in the project folder, or append text to it.
        """
        return _files.write_file(self.workspace.sandbox, path, content, mode)

    def list_directory(self, path: str = ".") -> ListDirectoryResult:
        """List a directory's entries with their types and sizes (symlinks are not followed).

        What a folder contains: its files and subfolders, each with its size in bytes.
        """
        return _files.list_directory(self.workspace.sandbox, path, self.options.max_entries)

    def search_files(
        self, pattern: str, path: str = ".", max_depth: _Limit | None = None
    ) -> SearchFilesResult:
        """Find paths by glob: "*.py" matches names at any depth, "src/*.py" relative paths.

        Locate files by name or extension anywhere in the project folder.
        """
        return _files.search_files(
            self.workspace.sandbox, pattern, path, max_depth, self.options.max_results
        )

    def grep(
        self,
        pattern: str,
        path: str = ".",
        ignore_case: bool = False,
        line_numbers: bool = True,
        max_results: _Limit | None = None,
    ) -> NativeMCPResponse[GrepResult]:
        """Search file contents with a regular expression; matches come with file and line.

        Look inside the project's files for a word, text or pattern: the lines holding it.
        """
        result = _files.grep(
            self.workspace.sandbox,
            pattern,
            path,
            ignore_case,
            max_results or self.options.max_results,
            self.options.grep_timeout,
        )
        return structured_response(_files.render_grep(result, line_numbers), result)

    def replace_lines_in_file(
        self, path: str, replacements: list[LineReplacement]
    ) -> ReplaceLinesResult:
        """Replace line ranges (start_line..end_line, inclusive); empty new_content deletes.

        Edit a file in place: change, fix, insert or remove some of its lines.
        """
        return _files.replace_lines_in_file(self.workspace.sandbox, path, replacements)

    # -- the shell -------------------------------------------------------------------

    async def execute_shell(
        self,
        command: str,
        # The argument name is the tool's public interface (the issue fixes it); it is the
        # kill deadline of the child, enforced inside run_shell, not a cancel scope here.
        timeout: Annotated[float, msgspec.Meta(gt=0)] | None = None,
    ) -> ShellResult:
        """Run a shell command in the workspace root; its process group is killed at timeout.

        Execute a program or script in a terminal, as bash would: build, test, install.
        """
        options = self.options
        if not options.shell_enabled:
            raise ToolError(
                "execute_shell is disabled on this workspace",
                structured_content={"rule": "shell_disabled"},
            )
        seconds = timeout or options.default_shell_timeout
        if seconds > options.max_shell_timeout:
            raise ToolError(
                f"timeout {seconds} s is over the limit of {options.max_shell_timeout} s",
                structured_content={"rule": "timeout_limit", "limit": options.max_shell_timeout},
            )
        return await run_shell(
            command,
            cwd=self.workspace.sandbox.root,
            kill_after=seconds,
            max_output_bytes=options.max_output_bytes,
        )

    # -- exports ---------------------------------------------------------------------

    def export_file(
        self, path: str, display_name: str | None = None, description: str | None = None
    ) -> NativeMCPResponse[ExportResult]:
        """Copy a file to exports/files/ and show a download card; says what was exported.

        Hand one finished file to the user to keep or share.
        """
        return _exports.export_file(
            self.workspace.sandbox, self.options, path, display_name, description
        )

    def export_zip(
        self, files: Annotated[list[str], msgspec.Meta(min_length=1)], package_name: str
    ) -> NativeMCPResponse[ExportResult]:
        """Pack files into exports/packages/<name>_<time>.zip and show a download card.

        Bundle several files into one archive, for the user to keep or share.
        """
        return _exports.export_zip(self.workspace.sandbox, self.options, files, package_name)

    def download_file(self, path: str) -> NativeMCPResponse[DownloadResult]:
        """Send a workspace file (an export) to the user as a download: an export card's action."""
        return _exports.download_file(self.workspace.sandbox, self.options, path)

    def export_resource(self, kind: str, name: str) -> ResourceContents:
        """An exported file (exports/<kind>/<name>): text for a UTF-8 text type, else bytes;
        the mime type is the one the listing gives."""
        sandbox = self.workspace.sandbox
        try:
            target = sandbox.resolve(f"exports/{kind}/{unquote(name)}")
            data = sandbox.read_bytes(target, limit=self.options.max_export_bytes)
        except ToolError as exc:
            raise FeatureError(exc.message) from exc
        uri = EXPORT_TEMPLATE.format(kind=kind, name=name)
        return _exports.export_contents(uri, target.name, data)

    def exports(self) -> list[Resource]:
        """Every exported file, as a resource."""
        root = self.workspace.sandbox.root / "exports"
        found: list[Resource] = []
        for kind in sorted(p for p in root.glob("*") if p.is_dir()):
            for item in sorted(p for p in kind.iterdir() if p.is_file()):
                found.append(
                    Resource(
                        uri=EXPORT_TEMPLATE.format(kind=kind.name, name=quote(item.name)),
                        name=item.name,
                        description=f"exported to exports/{kind.name}/",
                        mime_type=_exports.mime_type_of(item.name),
                    )
                )
        return found


def create_server(config: ServerConfig) -> Server:
    """The workspace server for ``config`` (root, data folder and options).

    Raises:
        ValueError: neither ``workspace_root`` nor ``data_dir`` is set, or the options
            are invalid.
    """
    options = parse_options(config.options)
    workspace = _Workspace(config, options)
    server = Server(
        "workspace",
        description="Sandboxed workspace: files, search, a shell and exports with a download card",
    )
    server.on_switch_context(lambda session_id, thread_id: workspace.switch(session_id))
    server.service_context(lambda: _SERVICE_CONTEXT)

    # The tools, in the order tools/list shows them.
    tools = _Tools(workspace, options)
    server.tool(render=_files.render_read_file, annotations=_READ_ONLY)(tools.read_file)
    server.tool(render=_files.render_write_file, annotations=_WRITES)(tools.write_file)
    server.tool(render=_files.render_list_directory, annotations=_READ_ONLY)(tools.list_directory)
    server.tool(render=_files.render_search_files, annotations=_READ_ONLY)(tools.search_files)
    server.tool(annotations=_READ_ONLY)(tools.grep)
    server.tool(render=_files.render_replace_lines, annotations=_WRITES)(
        tools.replace_lines_in_file
    )
    server.tool(render=render_shell, annotations=_WRITES)(tools.execute_shell)
    server.tool(annotations=_ADDS, ui=_exports.EXPORT_APP_URI)(tools.export_file)
    server.tool(annotations=_ADDS, ui=_exports.EXPORT_APP_URI)(tools.export_zip)
    server.tool(annotations=_READ_ONLY)(tools.download_file)

    _exports.declare_app(server, options)  # the export card's MCP App page
    server.resource(EXPORT_TEMPLATE, name="export")(tools.export_resource)
    server.resource_lister(tools.exports)
    return server
