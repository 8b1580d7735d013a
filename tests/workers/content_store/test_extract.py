"""Documents the content store reads through optional libraries: a damaged file is one
clear `ExtractError` naming its kind, whatever the library raised."""

from __future__ import annotations

import pytest

from nativemcp.workers.content_store._extract import ExtractError, extract_text


@pytest.mark.parametrize(
    ("filename", "kind"), [("a.pdf", "PDF"), ("a.docx", "DOCX"), ("a.xlsx", "XLSX")]
)
def test_a_damaged_document_is_an_extract_error_naming_its_kind(filename: str, kind: str) -> None:
    with pytest.raises(ExtractError, match=f"^Cannot read the {kind}: "):
        extract_text(b"PK\x03\x04 not really a document", filename, None)
