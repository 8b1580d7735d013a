"""The official SDK client's token storage, in memory (its ``TokenStorage`` protocol)."""

from __future__ import annotations

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


class MemoryTokens:
    """Keeps one registered client and its tokens (none until set) for an SDK
    ``OAuthClientProvider``."""

    def __init__(
        self, client: OAuthClientInformationFull, tokens: OAuthToken | None = None
    ) -> None:
        self.client = client
        self.tokens = tokens

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info
