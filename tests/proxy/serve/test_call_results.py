"""The fast path's plain tool results: dumped without the SDK's model, the same after the
version's check as the SDK path's dump of the model (and refused where it is refused)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from nativemcp.protocol import (
    Annotations,
    CallToolResult,
    ImageContent,
    NativeMCPResponse,
    ProtocolError,
    TextContent,
    response_to_sdk,
    spec_call_result,
)
from nativemcp.proxy.serve.fast._call_results import plain_dump
from nativemcp.proxy.serve.fast._listing_checks import ListingChecks

VERSIONS = ("2026-07-28", "2025-11-25")

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
_objects = st.dictionaries(st.text(max_size=6), _json, max_size=4)
_metas = st.none() | _objects | st.just({"k": None}) | st.just({"a": {"b": None}})
_blocks = st.builds(TextContent, text=st.text(max_size=12), meta=_metas)
_responses = st.builds(
    lambda blocks, structured, is_error, meta, value: NativeMCPResponse(
        result=CallToolResult(
            content=blocks, structured_content=structured, is_error=is_error, meta=meta
        ),
        structured_result=value,
    ),
    st.lists(_blocks, max_size=3),
    st.none() | _objects,
    st.booleans(),
    _metas,
    st.none() | _json,
)


def _sdk_route(version: str, response: NativeMCPResponse[Any]) -> dict[str, Any]:
    """What the SDK path sends: the SDK's model, dumped, then the version's check."""
    dumped = response_to_sdk(response).model_dump(by_alias=True, mode="json", exclude_none=True)
    return ListingChecks().result("tools/call", version, dumped)


def _plain_route(version: str, response: NativeMCPResponse[Any]) -> dict[str, Any] | None:
    """What the fast path sends for a plain result (None: the SDK's model shapes it)."""
    dumped = plain_dump(spec_call_result(response))
    if dumped is None:
        return None
    return ListingChecks().result("tools/call", version, dumped)


@settings(max_examples=300, deadline=None)
@given(response=_responses)
@pytest.mark.parametrize("version", VERSIONS)
def test_a_plain_result_is_sent_as_the_sdk_path_sends_it(
    version: str, response: NativeMCPResponse[Any]
) -> None:
    try:
        expected = _sdk_route(version, response)
    except (ProtocolError, ValidationError):
        # Refused there: refused here too, so the fast path lets the model word it.
        with pytest.raises((ProtocolError, ValidationError)):
            _plain_route(version, response)
        return
    assert _plain_route(version, response) == expected


def test_two_defaults_are_written_out_as_the_sdk_model_writes_them() -> None:
    empty: NativeMCPResponse[Any] = NativeMCPResponse(result=CallToolResult(content=[]))
    dumped = plain_dump(spec_call_result(empty))
    assert dumped == {"content": [], "isError": False, "resultType": "complete"}
    # A 2025-11-25 client knows no resultType: the check drops it, as on the SDK path.
    assert "resultType" not in _plain_route("2025-11-25", empty)  # type: ignore[operator]
    assert _plain_route("2026-07-28", empty) == _sdk_route("2026-07-28", empty)


def test_none_in_meta_is_dropped_at_the_top_as_the_check_drops_it() -> None:
    response: NativeMCPResponse[Any] = NativeMCPResponse(
        result=CallToolResult(
            content=[TextContent(text="x", meta={"gone": None, "kept": {"inner": None}})],
            structured_content={"null": None},
        )
    )
    sent = _plain_route("2026-07-28", response)
    assert sent is not None
    assert sent["content"][0]["_meta"] == {"kept": {"inner": None}}
    assert sent["structuredContent"] == {"null": None}
    assert sent == _sdk_route("2026-07-28", response)


@pytest.mark.parametrize(
    "block",
    [
        TextContent(text="x", annotations=Annotations(priority=0.5)),
        ImageContent(data="aGk=", mime_type="image/png"),
    ],
)
def test_other_blocks_are_not_plain(block: Any) -> None:
    assert plain_dump(CallToolResult(content=[TextContent(text="a"), block])) is None
