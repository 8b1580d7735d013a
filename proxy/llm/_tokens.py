"""What a text costs a model: the token counts the demo, the console and the benches print.

With the ``tokens`` extra (``pip install 'nativemcp[tokens]'``) a count is exact: the
o200k_base encoding (GPT-4o's), from `quicktok`, which ships its vocabulary and so counts
offline (``tiktoken`` downloads its vocabularies at run time). Without it a count is an
estimate, characters / 4.
"""

from __future__ import annotations

import functools
from typing import Any, Final

__all__ = ["ENCODING", "count_tokens", "exact_counts", "token_note"]

ENCODING: Final = "o200k_base"
"""The encoding of exact counts (GPT-4o's and later OpenAI models')."""
_EXACT_NOTE: Final = f"tokens: exact {ENCODING} counts (other models' tokenizers differ a little)"
_ESTIMATE_NOTE: Final = (
    "tokens ≈ characters / 4 (an estimate; pip install 'nativemcp[tokens]' counts exactly)"
)


@functools.cache
def _encoding() -> Any:
    """The o200k_base encoder, loaded once (about a second), or None without quicktok."""
    try:
        import quicktok
    except ImportError:
        return None
    return quicktok.get_encoding(ENCODING)


def exact_counts() -> bool:
    """Whether `count_tokens` counts exactly (the ``tokens`` extra is installed)."""
    return _encoding() is not None


def token_note() -> str:
    """One line saying how `count_tokens` counts, for under a table of counts."""
    return _EXACT_NOTE if exact_counts() else _ESTIMATE_NOTE


def count_tokens(text: str) -> int:
    """How many tokens ``text`` costs a model.

    Exact with the ``tokens`` extra, else characters / 4 (see `token_note`).
    Special-token strings count as plain text."""
    encoding = _encoding()
    if encoding is not None:
        return int(encoding.count(text))
    return max(1, round(len(text) / 4)) if text else 0
