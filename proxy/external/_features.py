"""The MCP features besides tools an external server offers, asked through the SDK.

`request_feature` sends one request of the pool's feature methods (resources, prompts,
completion) on a connected official client; `ExternalServer.feature` bounds it by the
call's time limit and words the errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nativemcp.protocol import METHOD_NOT_FOUND, FeatureError

if TYPE_CHECKING:
    from mcp import Client

__all__ = ["request_feature"]


async def request_feature(client: Client, method: str, params: dict[str, Any]) -> Any:
    """The SDK's result of feature request ``method`` with ``params``.

    Raises:
        FeatureError: ``method`` is none of the feature methods (METHOD_NOT_FOUND).
        MCPError: the server's error answer.
    """
    import mcp_types

    result: Any
    if method == "resources/list":
        result = await client.list_resources()
    elif method == "resources/templates/list":
        result = await client.list_resource_templates()
    elif method == "resources/read":
        result = await client.read_resource(str(params["uri"]))
    elif method == "prompts/list":
        result = await client.list_prompts()
    elif method == "prompts/get":
        result = await client.get_prompt(str(params["name"]), dict(params.get("arguments") or {}))
    elif method == "completion/complete":
        ref = params["ref"]
        reference: Any = (
            mcp_types.PromptReference(type="ref/prompt", name=ref["name"])
            if ref.get("type") == "ref/prompt"
            else mcp_types.ResourceTemplateReference(type="ref/resource", uri=ref["uri"])
        )
        result = await client.complete(reference, dict(params["argument"]))
    else:
        raise FeatureError(f"unknown method {method!r}", code=METHOD_NOT_FOUND)
    return result
