"""The export status texts and card labels, in English (default) and Korean."""

from __future__ import annotations

from typing import Final

from ._options import Locale

__all__ = ["format_size", "message"]

_MESSAGES: Final[dict[str, dict[Locale, str]]] = {
    "file_done": {
        "en": "Exported the file '{name}' ({size}) from {source} to {target}. "
        "The card below has a download button.",
        "ko": "파일 '{name}'({size})을(를) {source}에서 {target}(으)로 export했습니다. "
        "아래 카드의 버튼으로 다운로드할 수 있습니다.",
    },
    "zip_done": {
        "en": "Created the ZIP package '{name}' ({size}) at {target} with {count} file(s): "
        "{files}. The card below has a download button.",
        "ko": "ZIP 패키지 '{name}'({size})을(를) {target}에 만들었습니다. 파일 {count}개: "
        "{files}. 아래 카드의 버튼으로 다운로드할 수 있습니다.",
    },
    "missing": {
        "en": "Nothing was exported: {count} file(s) could not be used: {paths}",
        "ko": "export하지 않았습니다. 사용할 수 없는 파일 {count}개: {paths}",
    },
    "title_file": {"en": "File export", "ko": "파일 export"},
    "title_zip": {"en": "ZIP package", "ko": "ZIP 패키지"},
    "download": {"en": "Download", "ko": "다운로드"},
    "files": {"en": "Files", "ko": "파일"},
    "location": {"en": "Saved at", "ko": "저장 위치"},
    "created": {"en": "Created", "ko": "생성 시각"},
    "size": {"en": "Size", "ko": "크기"},
}


def message(locale: Locale, key: str, **values: object) -> str:
    """The text ``key`` in ``locale``, with ``values`` filled in."""
    return _MESSAGES[key][locale].format(**values)


def format_size(size: int) -> str:
    """``size`` bytes for people: ``"812 bytes"``, ``"1.4 KB"``, ``"3.0 MB"``."""
    if size < 1024:
        return f"{size} bytes"
    value = float(size)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024 or unit == "GB":
            break
    return f"{value:.1f} {unit}"
