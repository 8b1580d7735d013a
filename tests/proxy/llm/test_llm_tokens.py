"""Token counts: exact o200k_base counts offline with the ``tokens`` extra (installed by
the ``test`` extra), an estimate that says so without it."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from nativemcp.proxy.llm import ENCODING, count_tokens, exact_counts, token_note
from nativemcp.proxy.llm._tokens import _encoding


@pytest.fixture
def without_quicktok(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As if the ``tokens`` extra were not installed."""
    _encoding.cache_clear()
    monkeypatch.setitem(sys.modules, "quicktok", None)  # import quicktok: ImportError
    yield
    _encoding.cache_clear()


def test_counts_are_exact_o200k_base_counts_made_offline() -> None:
    assert exact_counts()
    assert ENCODING in token_note()
    # o200k_base: "hello" and " world" are one token each; characters / 4 says 3.
    assert count_tokens("hello world") == 2
    assert count_tokens("hello world " * 100) == 201
    assert count_tokens("") == 0


def test_a_special_token_string_counts_as_plain_text() -> None:
    # A tool result may quote one; it is text to the model, not a control token.
    assert count_tokens("<|endoftext|>") > 1


@pytest.mark.usefixtures("without_quicktok")
def test_without_the_extra_the_count_is_an_estimate_and_the_note_says_so() -> None:
    assert not exact_counts()
    assert count_tokens("x" * 400) == 100
    assert count_tokens("") == 0
    assert "nativemcp[tokens]" in token_note()
