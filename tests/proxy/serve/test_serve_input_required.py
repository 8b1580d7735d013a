"""Sampling and elicitation for 2026-07-28 clients: the official SDK `Client` in its
default mode gets an ``InputRequiredResult`` and retries; the bridge resumes the
suspended pool call (real worker processes, real sockets and stdio)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from _mcp_http import serving
from mcp import Client, StdioServerParameters
from mcp.client.context import ClientRequestContext
from mcp.shared.exceptions import MCPError
from test_serve import SERVERS, TESTS, _elicitation, _sampling

from nativemcp.protocol import INPUT_KEY_META_KEY
from nativemcp.proxy import McpBridge, WorkerPool, http_app

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]


async def _decline(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def _check_rounds(url_or_params: str | StdioServerParameters) -> None:
    async with Client(
        url_or_params, sampling_callback=_sampling, elicitation_callback=_elicitation
    ) as client:
        assert client.protocol_version == "2026-07-28"
        sampled = await client.call_tool("ask_model", {"question": "meaning?"})
        assert _text(sampled) == "model says 42 (meaning?)"
        assert _text(await client.call_tool("ask_user", {})) == "hello Ada"
        # Two rounds: the model, then the user, each an InputRequiredResult.
        twice = await client.call_tool("ask_twice", {"topic": "a cat"})
        assert _text(twice) == "42 (a name for a cat), then Ada"
        # Two questions at once: both are answered (in one round or two).
        both = await client.call_tool("ask_both", {})
        assert _text(both) == "42 (one) | 42 (two)"
        # Calls that ask nothing are answered at once, as before.
        moved = await client.call_tool("move", {"point": {"x": 1, "y": 2}})
        assert moved.structured_content == {"x": 2, "y": 2}
    async with Client(
        url_or_params, sampling_callback=_sampling, elicitation_callback=_decline
    ) as client:
        assert _text(await client.call_tool("ask_user", {})) == "decline"
        twice = await client.call_tool("ask_twice", {"topic": "a dog"})
        assert _text(twice) == "42 (a name for a dog), decline"


async def test_default_mode_client_samples_and_elicits_over_http() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    async with serving(http_app(pool)) as base:
        with anyio.fail_after(60):
            await _check_rounds(f"{base}/mcp/shapes")


async def test_default_mode_client_samples_and_elicits_over_stdio() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "nativemcp.proxy.cli", "serve", str(TESTS / "_serve_servers.py:server")],
        cwd=str(TESTS),
    )
    with anyio.fail_after(60):
        await _check_rounds(params)


DECLARES_BOTH: dict[str, Any] = {
    "sampling_callback": _sampling,
    "elicitation_callback": _elicitation,
}
"""A client that declares sampling and elicitation (serve asks for nothing else)."""


async def test_the_first_answer_names_the_request_and_a_sealed_state() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    async with serving(http_app(pool)) as base:
        with anyio.fail_after(60):
            # Callbacks declare the capabilities; the test answers the rounds itself.
            async with Client(f"{base}/mcp/shapes", **DECLARES_BOTH) as client:
                first = await client.session.call_tool(
                    "ask_model", {"question": "why?"}, allow_input_required=True
                )
                assert isinstance(first, types.InputRequiredResult)
                assert first.input_requests is not None
                ((key, request),) = first.input_requests.items()
                assert isinstance(request, types.CreateMessageRequest)
                assert isinstance(request.params.messages[0].content, types.TextContent)
                assert request.params.messages[0].content.text == "why?"
                state = first.request_state
                # Sealed by the SDK's boundary: the client cannot read or change it.
                assert state is not None and state.startswith("v1.") and "." not in state[3:]
                answer = types.CreateMessageResult(
                    role="assistant",
                    content=types.TextContent(type="text", text="because"),
                    model="m",
                )

                # The echo is attacker-controlled: forged, altered, or bound to other
                # arguments, it is refused with the SDK's frozen message.
                for forged_state, arguments in (
                    ("v1.forged", {"question": "why?"}),
                    (state[:-2] + ("AA" if state[-2:] != "AA" else "BB"), {"question": "why?"}),
                    (state, {"question": "why not?"}),
                ):
                    with pytest.raises(MCPError, match="Invalid or expired requestState"):
                        await client.session.call_tool(
                            "ask_model",
                            arguments,
                            input_responses={key: answer},
                            request_state=forged_state,
                        )

                done = await client.session.call_tool(
                    "ask_model",
                    {"question": "why?"},
                    input_responses={key: answer},
                    request_state=state,
                )
                assert _text(done) == "model says because"
                # A state is used once: the call it resumed is gone.
                with pytest.raises(MCPError, match="resumes no waiting call: it was already used"):
                    await client.session.call_tool(
                        "ask_model",
                        {"question": "why?"},
                        input_responses={key: answer},
                        request_state=state,
                    )


async def test_a_malformed_response_reaches_the_tool_as_its_error() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    async with serving(http_app(pool)) as base:
        with anyio.fail_after(60):
            # Callbacks declare the capabilities; the test answers the rounds itself.
            async with Client(f"{base}/mcp/shapes", **DECLARES_BOTH) as client:
                first = await client.session.call_tool("ask_user", {}, allow_input_required=True)
                assert isinstance(first, types.InputRequiredResult)
                assert first.input_requests is not None
                (key,) = first.input_requests
                # A sampling answer to an elicitation: the tool's elicit raises, so the
                # call ends as a tool error naming the problem.
                wrong = types.CreateMessageResult(
                    role="assistant", content=types.TextContent(type="text", text="x"), model="m"
                )
                done = await client.session.call_tool(
                    "ask_user", {}, input_responses={key: wrong}, request_state=first.request_state
                )
                assert done.is_error
                assert "response to elicitation/create is malformed" in _text(done)


async def test_an_abandoned_call_is_cancelled_and_its_state_refused(tmp_path: Path) -> None:
    note = tmp_path / "note.txt"
    async with WorkerPool(SERVERS, timeout=20) as pool:
        bridge = McpBridge(pool, ["shapes"], input_timeout=0.5)
        async with bridge, Client(bridge.server(), **DECLARES_BOTH) as client:
            with anyio.fail_after(60):
                first = await client.session.call_tool(
                    "ask_and_note", {"path": str(note)}, allow_input_required=True
                )
                assert isinstance(first, types.InputRequiredResult)
                assert first.input_requests is not None
                assert len(bridge.suspended) == 1
                # Nobody comes back: the call is cancelled, and its worker stops the tool.
                # The worker process writes the note: there is no event to wait on here.
                while not note.exists():  # noqa: ASYNC110
                    await anyio.sleep(0.05)
                assert note.read_text() == "cancelled"
                assert len(bridge.suspended) == 0
                (key,) = first.input_requests
                with pytest.raises(MCPError, match="Invalid or expired requestState"):
                    await client.session.call_tool(
                        "ask_and_note",
                        {"path": str(note)},
                        input_responses={key: types.ElicitResult(action="decline")},
                        request_state=first.request_state,
                    )
                # A client that does come back in time finishes the call.
                again = await client.session.call_tool(
                    "ask_and_note", {"path": str(note)}, allow_input_required=True
                )
                assert isinstance(again, types.InputRequiredResult)
                assert again.input_requests is not None
                (key,) = again.input_requests
                done = await client.session.call_tool(
                    "ask_and_note",
                    {"path": str(note)},
                    input_responses={key: types.ElicitResult(action="decline")},
                    request_state=again.request_state,
                )
                assert _text(done) == "decline"
                assert note.read_text() == "finished"
                assert len(bridge.suspended) == 0


async def test_round_ones_state_replayed_while_round_two_waits_is_refused() -> None:
    async with WorkerPool(SERVERS, timeout=20) as pool:
        bridge = McpBridge(pool, ["shapes"])
        # Callbacks declare the capabilities; the test answers the rounds itself.
        async with bridge, Client(bridge.server(), **DECLARES_BOTH) as client:
            with anyio.fail_after(60):
                arguments = {"topic": "a fox"}
                first = await client.session.call_tool(
                    "ask_twice", arguments, allow_input_required=True
                )
                assert isinstance(first, types.InputRequiredResult)
                assert first.input_requests is not None
                (sample_key,) = first.input_requests
                sampled: types.InputResponses = {
                    sample_key: types.CreateMessageResult(
                        role="assistant",
                        content=types.TextContent(type="text", text="Rex"),
                        model="m",
                    )
                }
                second = await client.session.call_tool(
                    "ask_twice",
                    arguments,
                    input_responses=sampled,
                    request_state=first.request_state,
                    allow_input_required=True,
                )
                assert isinstance(second, types.InputRequiredResult)
                assert second.input_requests is not None
                # Round 2 waits for the user; round 1's state, sealed and valid, comes
                # back: it names a round that is over.
                with pytest.raises(MCPError, match="resumes no waiting call"):
                    await client.session.call_tool(
                        "ask_twice",
                        arguments,
                        input_responses=sampled,
                        request_state=first.request_state,
                        allow_input_required=True,
                    )
                (elicit_key,) = second.input_requests
                accepted = types.ElicitResult(action="accept", content={"name": "Ada"})
                done = await client.session.call_tool(
                    "ask_twice",
                    arguments,
                    input_responses={elicit_key: accepted},
                    request_state=second.request_state,
                )
                assert _text(done) == "Rex, then Ada"


async def test_stateless_http_says_why_a_tool_cannot_ask() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    async with serving(http_app(pool, stateless=True)) as base:
        with anyio.fail_after(60):
            async with Client(
                f"{base}/mcp/shapes",
                sampling_callback=_sampling,
                elicitation_callback=_elicitation,
            ) as client:
                assert client.protocol_version == "2026-07-28"
                refused = await client.call_tool("ask_model", {"question": "meaning?"})
                assert refused.is_error
                assert "this server is stateless" in _text(refused)
                assert "without --stateless" in _text(refused)
                moved = await client.call_tool("move", {"point": {"x": 1, "y": 2}})
                assert moved.structured_content == {"x": 2, "y": 2}
            # The handshake era is refused the same way (its answer has no way back).
            async with Client(
                f"{base}/mcp/shapes",
                sampling_callback=_sampling,
                elicitation_callback=_elicitation,
                mode="legacy",
            ) as client:
                refused = await client.call_tool("ask_user", {})
                assert refused.is_error
                assert "this server is stateless" in _text(refused)


async def test_a_request_the_tool_names_is_sent_under_that_key() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    async with serving(http_app(pool)) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp/shapes", **DECLARES_BOTH) as client:
                first = await client.session.call_tool("ask_named", {}, allow_input_required=True)
                assert isinstance(first, types.InputRequiredResult)
                assert first.input_requests is not None
                assert list(first.input_requests) == ["capital"]
                request = first.input_requests["capital"]
                # The key is the tool's word to serve: the client's request has none.
                assert isinstance(request, types.CreateMessageRequest)
                assert INPUT_KEY_META_KEY not in (request.params.meta or {})
                answer = types.CreateMessageResult(
                    role="assistant",
                    content=types.TextContent(type="text", text="Paris"),
                    model="m",
                )
                second = await client.session.call_tool(
                    "ask_named",
                    {},
                    input_responses={"capital": answer},
                    request_state=first.request_state,
                    allow_input_required=True,
                )
                assert isinstance(second, types.InputRequiredResult)
                assert second.input_requests is not None
                assert list(second.input_requests) == ["who"]
                done = await client.session.call_tool(
                    "ask_named",
                    {},
                    input_responses={
                        "who": types.ElicitResult(action="accept", content={"name": "Ada"})
                    },
                    request_state=second.request_state,
                    allow_input_required=True,
                )
                assert isinstance(done, types.CallToolResult)
                assert _text(done) == "Paris, Ada"


async def test_requests_a_tool_sends_at_once_reach_the_client_in_one_round() -> None:
    # A tool that gathers two questions sends them a moment apart over its pipe; the
    # round waits for the second, every time (it went out with the first alone, now
    # and then: the conformance suite's multiple-input-requests scenario).
    pool = WorkerPool(SERVERS, timeout=20)
    async with serving(http_app(pool)) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp/shapes", **DECLARES_BOTH) as client:
                for _ in range(8):
                    first = await client.session.call_tool(
                        "ask_both_a_moment_apart", {}, allow_input_required=True
                    )
                    assert isinstance(first, types.InputRequiredResult)
                    assert first.input_requests is not None
                    assert len(first.input_requests) == 2, first.input_requests
