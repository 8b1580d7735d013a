"""A tool's plain result dumped as the SDK's model dumps it, without building the model
(for the fast path).

The SDK path turns a tool's result into the SDK's ``CallToolResult`` (a pydantic
validation of the whole result) and dumps it, and then the version's surface check
validates and dumps it again. For a plain result, text blocks with no annotations,
the first round changes nothing but two defaults: the model's dump is the result's own
JSON form with ``isError`` and ``resultType`` written out. So the fast path builds that
dict directly and leaves the one real check, the surface's, to run on it as before
(tests/proxy/serve/test_call_results.py holds the two equal over generated results).
Any other block (an image, a resource link whose URI the model normalizes, an
annotation whose priority it range-checks) goes through the SDK's model.
"""

from __future__ import annotations

from typing import Any

import msgspec

from nativemcp.protocol import CallToolResult, TextContent

__all__ = ["plain_dump"]


def plain_dump(result: CallToolResult) -> dict[str, Any] | None:
    """``to_sdk(result).model_dump(by_alias=True, mode="json", exclude_none=True)`` for
    a plain result (text blocks only, none annotated); None for any other."""
    for block in result.content:
        if type(block) is not TextContent or block.annotations is not None:
            return None
    dumped: dict[str, Any] = msgspec.to_builtins(result)
    dumped.setdefault("content", [])
    dumped.setdefault("isError", False)
    dumped["resultType"] = "complete"  # the model's default: the surface keeps it or not
    return dumped
