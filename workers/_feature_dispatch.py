"""Answering resources, prompts and completion requests by MCP method, for any `Server`.

One function serves the worker's `FeatureRequest` frames and in-process servers alike,
so both answer with the same spec-shaped results.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from nativemcp.protocol import METHOD_NOT_FOUND, FeatureError

from ._resources import CompletionRef
from ._server import Server

__all__ = ["FEATURE_METHODS", "answer_feature"]

FEATURE_METHODS: Final = frozenset(
    {
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
    }
)
"""The MCP methods `answer_feature` serves."""


async def answer_feature(server: Server, method: str, params: dict[str, Any]) -> Any:
    """The spec-shaped result (JSON builtins) of ``method`` on ``server``.

    Raises:
        FeatureError: unknown method, resource or prompt, or bad params.
    """
    try:
        result: Any
        if method == "resources/list":
            result = {"resources": await server.list_resources()}
        elif method == "resources/templates/list":
            result = {"resourceTemplates": server.list_resource_templates()}
        elif method == "resources/read":
            result = {"contents": await server.read_resource(str(params["uri"]))}
        elif method == "prompts/list":
            result = {"prompts": server.list_prompts()}
        elif method == "prompts/get":
            result = await server.get_prompt(str(params["name"]), params.get("arguments"))
        elif method == "completion/complete":
            ref = params["ref"]
            completion_ref = CompletionRef(
                type=ref["type"], name=str(ref.get("name") or ref.get("uri") or "")
            )
            argument = params["argument"]
            context = (params.get("context") or {}).get("arguments")
            values = await server.complete(
                completion_ref, str(argument["name"]), str(argument.get("value", "")), context
            )
            result = {
                "completion": {"values": values[:100], "total": len(values), "hasMore": False}
            }
        else:
            raise FeatureError(f"method {method!r} is not served", code=METHOD_NOT_FOUND)
    except (KeyError, TypeError) as exc:
        raise FeatureError(f"bad params for {method}: {exc!r}") from exc
    return msgspec.to_builtins(result)
