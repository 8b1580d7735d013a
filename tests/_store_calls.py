"""Content-store calls through an MCP client, for the tests that check two server
processes (replicas, or `serve --workers`) share their state."""

from __future__ import annotations

from mcp import Client

NOTE = "학교에서 공부했다"
"""The text stored, found by the query ``학교`` (a Korean stem with a particle)."""


async def store_a_note(url: str) -> str:
    """Create a store holding one note, ``a.md``, through the server at ``url``; its id."""
    async with Client(url) as client:
        created = await client.call_tool("create_store", {"name": "shared"})
        assert created.structured_content is not None
        store_id = str(created.structured_content["storeId"])
        await client.call_tool(
            "add_content", {"store_id": store_id, "content": NOTE, "filename": "a.md"}
        )
    return store_id


async def find_the_note(url: str, store_id: str) -> list[str]:
    """The filenames a search for ``학교`` finds in the store, through the server at ``url``."""
    async with Client(url) as client:
        found = await client.call_tool(
            "keyword_similarity_search", {"store_id": store_id, "query": "학교"}
        )
    assert found.structured_content is not None
    return [hit["filename"] for hit in found.structured_content["results"]]
