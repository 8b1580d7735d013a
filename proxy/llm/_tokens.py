"""What a text costs a model, roughly: the estimate the demo and the console print."""

from __future__ import annotations

from typing import Final

__all__ = ["TOKEN_NOTE", "estimate_tokens"]

TOKEN_NOTE: Final = "tokens ≈ characters / 4 (a rough estimate; CJK text costs more per character)"


def estimate_tokens(text: str) -> int:
    """Roughly how many tokens ``text`` costs a model (see `TOKEN_NOTE`)."""
    return max(1, round(len(text) / 4)) if text else 0
