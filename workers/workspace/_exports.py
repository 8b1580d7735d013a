"""``export_file`` and ``export_zip``: copies under ``exports/`` that tell the agent what happened.

Each answers ``[text, resource]``: a plain sentence an agent can repeat ("did you export
it?"), then the HTML card (a UIResource), with the `ExportResult` as structured content.
Both tools also name the export card's MCP App (`EXPORT_APP_URI`, declared on the server
by `declare_app`): a host that speaks MCP Apps renders that page from the structured
content; the embedded card is for the clients that do not.

Sources go through the same sandbox as every other tool; a missing or refused source
fails the whole export with one error that lists every such path (nothing is skipped
silently).
"""

from __future__ import annotations

import base64
import io
import mimetypes
import re
import secrets
import time
import uuid
import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any, Final, Literal
from urllib.parse import quote

from nativemcp.protocol import (
    AppCsp,
    NativeMCPResponse,
    ResourceContents,
    ToolError,
    text_resource_response,
)
from nativemcp.workers import Server

from ._export_app import EXPORT_APP_URI, export_app_html
from ._i18n import format_size, message
from ._models import DownloadResult, ExportedFile, ExportResult
from ._options import WorkspaceOptions
from ._sandbox import Resolved, Sandbox
from ._ui import export_card, export_uri

__all__ = [
    "EXPORT_APP_URI",
    "EXPORT_FILES_DIR",
    "EXPORT_PACKAGES_DIR",
    "declare_app",
    "download_file",
    "export_contents",
    "export_file",
    "export_zip",
    "mime_type_of",
]

EXPORT_FILES_DIR: Final = "exports/files"
"""Where `export_file` puts its copies, relative to the workspace root."""
EXPORT_PACKAGES_DIR: Final = "exports/packages"
"""Where `export_zip` puts its packages, relative to the workspace root."""

_UNSAFE_NAME: Final = re.compile(r"[^\w.-]+")
_NUMBERED: Final = 9
"""Collisions named ``_2`` .. ``_9`` before names take a random part instead."""
_MAX_COLLISIONS: Final = 100


def declare_app(server: Server, options: WorkspaceOptions) -> None:
    """Declare the export card's app page (`EXPORT_APP_URI`) on ``server``; the export
    tools name it with ``ui=EXPORT_APP_URI``."""

    def export_card_app() -> str:
        """The export card as an MCP App: renders an export_file or export_zip result and
        downloads it through the host."""
        return export_app_html(options)

    # No origin beyond the page itself: everything it shows comes through the host.
    server.app(EXPORT_APP_URI, name="export_card", csp=AppCsp(), prefers_border=True)(
        export_card_app
    )


def _safe_name(name: str, fallback: str) -> str:
    """``name`` as one file-name component: word characters (any script), '.', '-'."""
    cleaned = _UNSAFE_NAME.sub("_", name).lstrip(".")  # no hidden files
    return cleaned[:100] or fallback


def _write_new(
    sandbox: Sandbox, folder: str, stem: str, suffix: str, data: bytes, limit: int
) -> Resolved:
    """Write ``data`` to ``folder/<stem>_<UTC timestamp><suffix>``, never over another file."""
    stamp = time.strftime("%Y%m%d_%H%M%S", time.gmtime())
    for attempt in range(1, _MAX_COLLISIONS + 1):
        # A second-resolution stamp collides for every export of one file within a
        # second: a few get a readable number, any number after that a random part.
        if attempt == 1:
            extra = ""
        elif attempt <= _NUMBERED:
            extra = f"_{attempt}"
        else:
            extra = f"_{secrets.token_hex(4)}"
        target = sandbox.resolve(f"{folder}/{stem}_{stamp}{extra}{suffix}")
        try:
            sandbox.write_bytes(target, data, mode="x", limit=limit)
        except ToolError as exc:
            if (exc.structured_content or {}).get("rule") == "exists":
                continue
            raise
        return target
    raise ToolError(f"Could not find a free export name for {stem}{suffix} in {folder}")


def _respond(
    options: WorkspaceOptions,
    *,
    kind: Literal["file", "zip"],
    name: str,
    description: str | None,
    target: Resolved,
    size: int,
    files: list[ExportedFile],
) -> NativeMCPResponse[ExportResult]:
    created_at = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    uri = export_uri(kind, uuid.uuid4().hex)
    result = ExportResult(
        kind=kind,
        uri=uri,
        export_path=target.display,
        size=size,
        count=len(files),
        files=files,
        created_at=created_at,
        name=name,
        description=description,
    )
    if kind == "file":
        text = message(
            options.locale,
            "file_done",
            name=name,
            size=format_size(size),
            source=files[0].path,
            target=target.display,
        )
    else:
        text = message(
            options.locale,
            "zip_done",
            name=name,
            size=format_size(size),
            target=target.display,
            count=len(files),
            files=", ".join(item.path for item in files),
        )
    card = export_card(
        uri=uri,
        kind=kind,
        locale=options.locale,
        name=name,
        description=description,
        export_path=target.display,
        size=size,
        files=files,
        created_at=created_at,
        download_tool=options.download_tool,
    )
    response: NativeMCPResponse[Any] = text_resource_response(text, card, value=result)
    return response


def export_file(
    sandbox: Sandbox,
    options: WorkspaceOptions,
    path: str,
    display_name: str | None,
    description: str | None,
) -> NativeMCPResponse[ExportResult]:
    """Copy ``path`` to ``exports/files/<stem>_<timestamp><ext>`` and show a card."""
    source = sandbox.resolve(path)
    try:
        data = sandbox.read_bytes(source, limit=options.max_export_bytes)
    except ToolError as exc:
        raise _failed(options, [(path, exc)]) from exc
    original = PurePosixPath(source.name)
    extension = _safe_name(original.suffix.lstrip("."), "")
    target = _write_new(
        sandbox,
        EXPORT_FILES_DIR,
        _safe_name(original.stem, "file"),
        f".{extension}" if extension else "",
        data,
        options.max_export_bytes,
    )
    return _respond(
        options,
        kind="file",
        name=display_name or original.name,
        description=description,
        target=target,
        size=len(data),
        files=[ExportedFile(path=source.display, size=len(data))],
    )


def export_zip(
    sandbox: Sandbox, options: WorkspaceOptions, files: Sequence[str], package_name: str
) -> NativeMCPResponse[ExportResult]:
    """Pack ``files`` into ``exports/packages/<name>_<timestamp>.zip`` and show a card."""
    sources: list[tuple[Resolved, bytes]] = []
    problems: list[tuple[str, ToolError]] = []
    seen: set[tuple[str, ...]] = set()
    total = 0
    for path in files:
        try:
            source = sandbox.resolve(path)
            data = sandbox.read_bytes(source, limit=options.max_export_bytes)
        except ToolError as exc:
            problems.append((path, exc))
            continue
        if source.parts in seen:
            continue
        seen.add(source.parts)
        total += len(data)
        sources.append((source, data))
    if problems:
        raise _failed(options, problems)
    if total > options.max_export_bytes:
        raise ToolError(
            f"Refused the package: its files total {total} bytes, over the export limit of "
            f"{options.max_export_bytes} bytes (rule: too_large)",
            structured_content={"rule": "too_large", "size": total},
        )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for source, data in sources:
            archive.writestr("/".join(source.parts), data)
    # A name, not a path: "../../x" names the package "x", inside exports/packages.
    package = _safe_name(
        PurePosixPath(package_name.replace("\\", "/")).name.removesuffix(".zip"), "package"
    )
    target = _write_new(
        sandbox, EXPORT_PACKAGES_DIR, package, ".zip", buffer.getvalue(), options.max_export_bytes
    )
    return _respond(
        options,
        kind="zip",
        name=package_name,
        description=None,
        target=target,
        size=len(buffer.getvalue()),
        files=[ExportedFile(path=source.display, size=len(data)) for source, data in sources],
    )


def _failed(options: WorkspaceOptions, problems: list[tuple[str, ToolError]]) -> ToolError:
    """One error naming every path that could not be exported, and why."""
    details = [
        {"path": path, **(exc.structured_content or {"error": exc.message})}
        for path, exc in problems
    ]
    missing = [item["path"] for item in details if item.get("rule") == "not_found"]
    listed = "; ".join(
        f"{item['path']!r}: {item.get('error', '')} (rule: {item.get('rule', 'error')})"
        for item in details
    )
    return ToolError(
        message(options.locale, "missing", count=len(details), paths=listed),
        structured_content={
            "rule": "missing_files" if len(missing) == len(details) else "invalid_files",
            "missing": missing,
            "problems": details,
        },
    )


_TEXT_TYPES: Final = frozenset(
    {"application/json", "application/xml", "application/javascript", "application/x-sh"}
)


def mime_type_of(name: str) -> str:
    """The mime type of a file called ``name``: one answer for listing, reading and
    downloading it."""
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def _is_text_type(mime_type: str) -> bool:
    return (
        mime_type.startswith("text/")
        or mime_type in _TEXT_TYPES
        or mime_type.endswith(("+json", "+xml"))
    )


def export_contents(uri: str, name: str, data: bytes) -> ResourceContents:
    """An export read as a resource: text for a text type that is UTF-8 (what a client
    shows and a model reads), a base64 blob otherwise; its mime type as `mime_type_of`."""
    mime_type = mime_type_of(name)
    if _is_text_type(mime_type):
        try:
            return ResourceContents(uri=uri, mime_type=mime_type, text=data.decode("utf-8"))
        except UnicodeDecodeError:
            pass  # mislabelled bytes: a blob, under the same mime type
    return ResourceContents(
        uri=uri, mime_type=mime_type, blob=base64.b64encode(data).decode("ascii")
    )


def download_file(
    sandbox: Sandbox, options: WorkspaceOptions, path: str
) -> NativeMCPResponse[DownloadResult]:
    """``path`` as a base64 blob resource: what an export card's button asks the host for."""
    target = sandbox.resolve(path)
    data = sandbox.read_bytes(target, limit=options.max_export_bytes)
    mime_type = mime_type_of(target.name)
    uri = "workspace:///" + quote(target.display)
    result = DownloadResult(path=target.display, uri=uri, mime_type=mime_type, size=len(data))
    blob = ResourceContents(
        uri=uri, mime_type=mime_type, blob=base64.b64encode(data).decode("ascii")
    )
    text = f"Sent {target.display} ({format_size(len(data))}, {mime_type}) for download."
    response: NativeMCPResponse[Any] = text_resource_response(text, blob, value=result)
    return response
