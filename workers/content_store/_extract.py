"""File bytes → plain text, by type: text-like files as they are, HTML to text,
minified JSON pretty-printed, and PDF, DOCX and XLSX through their parsing libraries
(the optional ``documents`` extra: pypdf, python-docx, openpyxl).
"""

from __future__ import annotations

import contextlib
import html.parser
import importlib
import io
import json
import mimetypes
from collections.abc import Iterator
from pathlib import PurePath
from typing import Any, Final

__all__ = [
    "ExtractError",
    "UnsupportedType",
    "extract_text",
    "guess_mime_type",
    "normalize_newlines",
]

PDF: Final = "application/pdf"
DOCX: Final = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX: Final = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
BINARY_DOCUMENTS: Final = frozenset({PDF, DOCX, XLSX})
"""Types read from bytes by a parsing library, never as text."""

_EXTENSIONS: Final[dict[str, str]] = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".rst": "text/x-rst",
    ".txt": "text/plain",
    ".text": "text/plain",
    ".log": "text/plain",
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".json": "application/json",
    ".jsonl": "application/jsonl",
    ".html": "text/html",
    ".htm": "text/html",
    ".xml": "application/xml",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".py": "text/x-python",
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".ts": "text/typescript",
    ".tsx": "text/typescript",
    ".jsx": "text/javascript",
    ".rs": "text/x-rust",
    ".go": "text/x-go",
    ".java": "text/x-java",
    ".c": "text/x-c",
    ".h": "text/x-c",
    ".cpp": "text/x-c++",
    ".hpp": "text/x-c++",
    ".cs": "text/x-csharp",
    ".rb": "text/x-ruby",
    ".php": "text/x-php",
    ".sh": "text/x-shellscript",
    ".sql": "application/sql",
    ".css": "text/css",
    ".ini": "text/plain",
    ".cfg": "text/plain",
    ".pdf": PDF,
    ".docx": DOCX,
    ".xlsx": XLSX,
}
# Types we know and refuse, so the error says what the file is.
_UNSUPPORTED_PREFIXES: Final = ("image/", "audio/", "video/", "font/")
_UNSUPPORTED: Final = frozenset(
    {
        "application/zip",
        "application/gzip",
        "application/x-tar",
        "application/octet-stream",
        "application/msword",
        "application/vnd.ms-excel",
        "application/vnd.ms-powerpoint",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "application/x-executable",
        "application/x-sharedlib",
    }
)
_TEXT_APPLICATION: Final = frozenset(
    {
        "application/json",
        "application/jsonl",
        "application/xml",
        "application/yaml",
        "application/toml",
        "application/sql",
        "application/javascript",
        "application/x-sh",
        "application/x-python-code",
    }
)
_SUPPORTED_TEXT: Final = "text, Markdown, code, JSON, CSV, HTML, XML, YAML"
_MINIFIED_LINE: Final = 2000


class ExtractError(ValueError):
    """The file cannot be turned into text (unsupported type, damaged, missing parser)."""


class UnsupportedType(ExtractError):
    """The file's type is not one the store reads (an image, an archive...)."""


def guess_mime_type(filename: str | None) -> str | None:
    """The MIME type the file name suggests (None: no idea)."""
    if not filename:
        return None
    suffix = PurePath(filename).suffix.lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    guessed, _ = mimetypes.guess_type(filename, strict=False)
    return guessed


def normalize_newlines(text: str) -> str:
    """``\\r\\n`` and lone ``\\r`` become ``\\n``; a leading BOM goes."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _is_text_type(mime_type: str) -> bool:
    return (
        mime_type.startswith("text/")
        or mime_type in _TEXT_APPLICATION
        or (mime_type.endswith(("+json", "+xml")))
    )


def _describe(filename: str | None, mime_type: str | None) -> str:
    suffix = PurePath(filename).suffix.lower() if filename else ""
    parts = [repr(suffix)] if suffix else []
    if mime_type:
        parts.append(mime_type)
    return " / ".join(parts) or "unknown type"


def _unsupported(filename: str | None, mime_type: str | None) -> UnsupportedType:
    return UnsupportedType(
        f"Unsupported file type {_describe(filename, mime_type)} for {filename or 'the content'}: "
        f"supported are {_SUPPORTED_TEXT}, PDF, DOCX and XLSX"
    )


def _decode(data: bytes, filename: str | None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        try:
            text = data.decode("utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else None
        except UnicodeDecodeError:
            text = None
        if text is None:
            raise ExtractError(
                f"{filename or 'The file'} is not valid UTF-8 text (byte {exc.start}): "
                "save it as UTF-8, or pass a supported document type"
            ) from exc
        return text


class _HTMLText(html.parser.HTMLParser):
    """Visible text of an HTML page: block elements end lines; script/style dropped."""

    _BLOCKS: Final = frozenset(
        [
            "p",
            "div",
            "br",
            "li",
            "ul",
            "ol",
            "tr",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "pre",
            "blockquote",
            "section",
            "article",
            "header",
            "footer",
            "nav",
            "table",
            "title",
            "dt",
            "dd",
            "hr",
        ]
    )
    _SKIP: Final = frozenset({"script", "style", "noscript", "template"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        elif tag in self._BLOCKS:
            self.parts.append("\n")
            if tag == "li":
                self.parts.append("- ")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skipping = max(0, self._skipping - 1)
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)

    def text(self) -> str:
        lines = (" ".join(line.split()) for line in "".join(self.parts).split("\n"))
        out: list[str] = []
        for line in lines:
            if line or (out and out[-1]):
                out.append(line)
        return "\n".join(out).strip("\n")


def html_to_text(source: str) -> str:
    """The visible text of an HTML document, one block per line."""
    parser = _HTMLText()
    parser.feed(source)
    parser.close()
    return parser.text()


def _pdf_text(data: bytes) -> str:
    pypdf = _library("PDF", "pypdf", "pypdf")
    with _damaged("PDF"):
        reader = pypdf.PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    return "\n\n".join(page.strip("\n") for page in pages)


def _docx_text(data: bytes) -> str:
    docx = _library("DOCX", "docx", "python-docx")
    with _damaged("DOCX"):
        document = docx.Document(io.BytesIO(data))
        lines = [paragraph.text for paragraph in document.paragraphs]
        for table in document.tables:
            lines.append("")
            for row in table.rows:
                lines.append("\t".join(cell.text for cell in row.cells))
    return "\n".join(lines)


def _xlsx_text(data: bytes) -> str:
    openpyxl = _library("XLSX", "openpyxl", "openpyxl")
    with _damaged("XLSX"):
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        lines: list[str] = []
        for sheet in workbook.worksheets:
            if lines:
                lines.append("")
            lines.append(f"## Sheet: {sheet.title}")
            for row in sheet.iter_rows(values_only=True):
                cells = ["" if value is None else str(value) for value in row]
                while cells and not cells[-1]:
                    cells.pop()
                if cells:
                    lines.append("\t".join(cells))
        workbook.close()
    return "\n".join(lines)


def _library(kind: str, module: str, package: str) -> Any:
    """The optional library that reads ``kind`` files (the ``documents`` extra)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ExtractError(
            f"Reading {kind} files needs the {package!r} package: "
            "pip install 'nativemcp[documents]'"
        ) from exc


@contextlib.contextmanager
def _damaged(kind: str) -> Iterator[None]:
    """A damaged ``kind`` file as `ExtractError` (each library raises assorted types)."""
    try:
        yield
    except Exception as exc:
        raise ExtractError(f"Cannot read the {kind}: {type(exc).__name__}: {exc}") from exc


def _pretty_json(text: str) -> str:
    if not any(len(line) > _MINIFIED_LINE for line in text.split("\n")):
        return text
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text  # not one JSON document (JSON lines, or broken): keep as written


def extract_text(data: bytes, filename: str | None, mime_type: str | None) -> tuple[str, str]:
    """``(text, mime_type)`` for a file's bytes; the type is guessed from the name if absent.

    Raises:
        ExtractError: the type is unsupported, the file is damaged, or its parser is
            not installed.
    """
    mime = (mime_type or guess_mime_type(filename) or "").split(";")[0].strip().lower()
    if mime == PDF:
        return normalize_newlines(_pdf_text(data)), mime
    if mime == DOCX:
        return normalize_newlines(_docx_text(data)), mime
    if mime == XLSX:
        return normalize_newlines(_xlsx_text(data)), mime
    if mime in _UNSUPPORTED or mime.startswith(_UNSUPPORTED_PREFIXES):
        raise _unsupported(filename, mime)
    if mime and not _is_text_type(mime):
        raise _unsupported(filename, mime)
    if not mime and b"\x00" in data[:8192]:
        raise _unsupported(filename, "binary data")
    return text_to_text(_decode(data, filename), mime or "text/plain")


def text_to_text(text: str, mime_type: str) -> tuple[str, str]:
    """``(text, mime_type)`` for text given directly: HTML to text, minified JSON expanded.

    Raises:
        ExtractError: the type names a binary format (pass the file's path instead).
    """
    mime = mime_type.split(";")[0].strip().lower()
    if mime in BINARY_DOCUMENTS or mime in _UNSUPPORTED or mime.startswith(_UNSUPPORTED_PREFIXES):
        raise ExtractError(
            f"{mime} is a binary format: pass the file with path=..., not as content text"
        )
    text = normalize_newlines(text)
    if mime in ("text/html", "application/xhtml+xml"):
        return html_to_text(text), mime
    if mime == "application/json":
        return _pretty_json(text), mime
    return text, mime
