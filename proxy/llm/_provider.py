"""The LLM providers nativemcp shapes tool results for, and the error for any other name."""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

from nativemcp.protocol import UnknownProviderError

__all__ = ["PROVIDERS", "Provider", "check_provider"]

Provider: TypeAlias = Literal["openai", "openai-responses", "anthropic", "gemini"]
"""A provider name: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages, Gemini."""

PROVIDERS: Final[tuple[Provider, ...]] = get_args(Provider)
"""Every valid provider name, in a stable order (for messages and parametrised tests)."""


def check_provider(provider: object) -> Provider:
    """``provider`` itself when it names a known provider.

    Raises:
        UnknownProviderError: any other value (a typo, another case, a non-string).
    """
    if isinstance(provider, str) and provider in PROVIDERS:
        return provider
    raise UnknownProviderError(provider, valid=PROVIDERS)
