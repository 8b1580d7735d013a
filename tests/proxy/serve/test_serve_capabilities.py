"""`nativemcp serve` asks an MCP client only for what the client declared it can answer.

The official SDK client declares ``sampling`` only with a sampling callback and
``elicitation`` only with an elicitation callback. Without them a tool's
``ctx.sample``/``ctx.elicit`` gets a `ClientRequestError` saying the client does not
support it (the tool's error reaches the model), and nothing is sent to the client: on
the handshake protocol (a request the client would refuse) and on 2026-07-28 (a round
trip the client cannot answer).
"""

from __future__ import annotations

from typing import Any, Literal

import anyio
import mcp_types as types
import pytest
from _mcp_http import serving
from mcp import Client
from test_serve import SERVERS, _elicitation, _sampling

from nativemcp.proxy import WorkerPool, http_app
from nativemcp.proxy.serve._capabilities import missing_capability

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_client_is_asked_only_for_what_it_declared(mode: Literal["legacy", "auto"]) -> None:
    asked: list[str] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
        asked.append("sampling")
        return await _sampling(context, params)

    pool = WorkerPool(SERVERS, timeout=20)
    async with serving(http_app(pool, ["shapes"])) as base:
        url = f"{base}/mcp/shapes"
        with anyio.fail_after(60):
            async with Client(url, mode=mode) as bare:
                sampled = await bare.call_tool("ask_model", {"question": "meaning?"})
                elicited = await bare.call_tool("ask_user", {})
            async with Client(url, mode=mode, sampling_callback=sampling) as samples:
                ok = await samples.call_tool("ask_model", {"question": "meaning?"})
                refused = await samples.call_tool("ask_user", {})
            async with Client(url, mode=mode, elicitation_callback=_elicitation) as elicits:
                named = await elicits.call_tool("ask_user", {})
    assert sampled.is_error and "does not support sampling/createMessage" in _text(sampled)
    assert "'sampling' capability" in _text(sampled)
    # Never a silent cancel: the tool is told why.
    assert elicited.is_error and "does not support elicitation/create" in _text(elicited)
    assert _text(ok) == "model says 42 (meaning?)" and asked == ["sampling"]
    assert refused.is_error and "'elicitation' capability" in _text(refused)
    assert _text(named) == "hello Ada"


def test_each_request_needs_its_own_capability() -> None:
    sampling = types.ClientCapabilities(sampling=types.SamplingCapability())
    form = types.ClientCapabilities(elicitation=types.ElicitationCapability())
    url_only = types.ClientCapabilities(
        elicitation=types.ElicitationCapability(url=types.UrlElicitationCapability())
    )
    roots = types.ClientCapabilities(roots=types.RootsCapability())
    sample = "sampling/createMessage"
    assert missing_capability(None, sample, {}) == "sampling"
    assert missing_capability(sampling, sample, {}) is None
    assert missing_capability(sampling, sample, {"tools": [{"name": "t"}]}) == "sampling.tools"
    assert missing_capability(sampling, sample, {"includeContext": "allServers"}) == (
        "sampling.context"
    )
    elicit = "elicitation/create"
    assert missing_capability(form, elicit, {"mode": "form"}) is None
    assert missing_capability(form, elicit, {"mode": "url"}) == "elicitation.url"
    assert missing_capability(url_only, elicit, {"mode": "url"}) is None
    assert missing_capability(url_only, elicit, {}) == "elicitation.form"
    assert missing_capability(sampling, "roots/list", {}) == "roots"
    assert missing_capability(roots, "roots/list", {}) is None
