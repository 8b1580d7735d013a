"""The fast path's own checks decide as the SDK's do: over generated requests and results
(malformed ones too, both eras), wherever ours answers, the SDK's check answers the same
(a result byte for byte); where the SDK refuses, ours never accepts. And the SDK's checks
are the ones these were proven against: a change in the installed SDK fails here first."""

from __future__ import annotations

import hashlib
import inspect
import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared import inbound
from mcp.shared.inbound import (
    InboundModernRoute,
    classify_inbound_request,
    encode_header_value,
    find_duplicated_routing_header,
)
from mcp_types import methods as surface
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter, ValidationError

from nativemcp.proxy.serve.fast._own_checks import plain_call_result, routing_version

VERSIONS = ("2026-07-28", "2025-11-25")
MODERN = frozenset(MODERN_PROTOCOL_VERSIONS)
ENCODER = msgspec.json.Encoder()
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats()
    | st.text(max_size=6)
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)
_meta_keys = st.sampled_from(["a", "com.example/x", SERVER_INFO_KEY, "", "bad key!"])
_metas = st.dictionaries(_meta_keys | st.text(max_size=4), _json, max_size=4)
_text_blocks = st.fixed_dictionaries(
    {"type": st.just("text"), "text": st.text(max_size=8)},
    optional={"_meta": st.none() | _metas},
)
_blocks = _text_blocks | st.dictionaries(
    st.sampled_from(["type", "text", "_meta", "annotations", "data"]), _json
)
_plain_results = st.fixed_dictionaries(
    {"content": st.lists(_text_blocks, max_size=3), "resultType": st.just("complete")},
    optional={
        "isError": st.booleans(),
        "_meta": st.none() | _metas,
        "structuredContent": st.none() | _metas | _json,
    },
)
"""Results as `plain_dump` makes them: most of what the fast path checks."""
_any_results = st.fixed_dictionaries(
    {"content": st.lists(_blocks, max_size=3) | _json},
    optional={
        "isError": st.booleans() | _json,
        "_meta": st.none() | _metas | _json,
        "structuredContent": st.none() | _metas | _json,
        "resultType": st.just("complete") | st.sampled_from(["input_required", "x"]) | _json,
        "extra": _json,
    },
)
"""Anything else, malformed included."""
_results = _plain_results | _any_results


def _sdk_result(version: str, dumped: dict[str, Any]) -> bytes | None:
    """The SDK's check of ``dumped``, encoded as the fast path sends it (None: refused)."""
    try:
        checked = surface.serialize_server_result("tools/call", version, dumped)
    except ValidationError:
        return None
    return ENCODER.encode(checked)


@settings(max_examples=600, deadline=None)
@given(dumped=_results)
@pytest.mark.parametrize("version", VERSIONS)
def test_a_result_our_check_passes_is_the_sdks_byte_for_byte(
    version: str, dumped: dict[str, Any]
) -> None:
    ours = plain_call_result(version, json.loads(json.dumps(dumped)))
    theirs = _sdk_result(version, dumped)
    if ours is not None:
        assert theirs is not None, "ours accepts what the SDK refuses"
        assert ENCODER.encode(ours) == theirs


@pytest.mark.parametrize("version", VERSIONS)
def test_plain_results_are_checked_by_ours_not_left_to_the_sdk(version: str) -> None:
    """The common shapes are answered by our check (not all None), null members and
    all, in the SDK's key order."""
    results: list[dict[str, Any]] = [
        {"content": [], "isError": False, "resultType": "complete"},
        {
            "structuredContent": {"k": None, "n": [1.5, None]},
            "isError": True,
            "content": [{"text": "hi", "type": "text", "_meta": {"a": None, "b": {"c": None}}}],
            "_meta": {"z": 1, "a": None},
            "resultType": "complete",
        },
    ]
    for dumped in results:
        ours = plain_call_result(version, dumped)
        assert ours is not None
        assert ENCODER.encode(ours) == _sdk_result(version, dumped)


def _headers(draw: Any, method: str, name: Any, version: Any) -> list[tuple[bytes, bytes]]:
    """Routing headers as a client might send them: right, wrong, missing or twice."""
    headers = [(b"content-type", b"application/json")]
    # Mostly right (the fast path's common case), else each way of being wrong.
    versions = st.sampled_from([version] * 6 + ["2025-11-25", "2026-07-28", "", None])
    methods = st.sampled_from([method] * 6 + ["tools/list", "Tools/Call", None])
    plain = name if isinstance(name, str) else "x"
    names = st.sampled_from(
        [plain] * 6 + [encode_header_value(plain), f"=?base64?{plain}?=", "other", None]
    )
    counts = st.sampled_from([1, 1, 1, 1, 2])
    for key, values in ((b"mcp-protocol-version", versions), (b"mcp-method", methods)):
        for _ in range(draw(counts)):
            value = draw(values)
            if isinstance(value, str):
                headers.append((key, value.encode("utf-8")))
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2]))):
        value = draw(names)
        if isinstance(value, str):
            headers.append((b"mcp-name", value.encode("utf-8")))
    shuffled: list[tuple[bytes, bytes]] = draw(st.permutations(headers))
    return shuffled


@st.composite
def _requests(draw: Any) -> tuple[dict[str, Any], list[tuple[bytes, bytes]]]:
    method = draw(st.sampled_from(["tools/call", "prompts/get", "resources/read", "tools/list"]))
    version = draw(st.sampled_from(["2026-07-28"] * 4 + ["2025-11-25", "2099-01-01", 1, None]))
    name = draw(st.none() | st.text(max_size=6) | st.integers() | st.just("été/ß"))
    params: dict[str, Any] = {"_meta": {VERSION_KEY: version, CAPABILITIES_KEY: {}}}
    if name is not None:
        params["uri" if method == "resources/read" else "name"] = name
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return body, _headers(draw, method, name, version)


def _sdk_version(body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> str | None:
    """The version the SDK's two routing checks pass the request at (None: refused)."""
    pairs = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]
    if find_duplicated_routing_header(pairs) is not None:
        return None
    verdict = classify_inbound_request(body, headers=dict(pairs))
    return verdict.protocol_version if isinstance(verdict, InboundModernRoute) else None


@settings(max_examples=800, deadline=None)
@given(request=_requests())
def test_a_request_our_routing_check_passes_the_sdks_passes_at_the_same_version(
    request: tuple[dict[str, Any], list[tuple[bytes, bytes]]],
) -> None:
    body, headers = request
    ours = routing_version(body, headers, MODERN)
    if ours is not None:
        assert _sdk_version(body, headers) == ours


def test_a_plain_request_is_routed_by_our_check() -> None:
    for method, key in (("tools/call", "name"), ("resources/read", "uri"), ("tools/list", None)):
        params: dict[str, Any] = {"_meta": {VERSION_KEY: "2026-07-28", CAPABILITIES_KEY: {}}}
        headers = [(b"mcp-protocol-version", b"2026-07-28"), (b"mcp-method", method.encode())]
        if key is not None:
            params[key] = "say"
            headers.append((b"mcp-name", b"say"))
        body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
        assert routing_version(body, headers, MODERN) == "2026-07-28"
        assert _sdk_version(body, headers) == "2026-07-28"


SDK_FINGERPRINT = "64456fb552017ad3ad2e9a90db7d965e417bd49f7998910c44dc55a3c393936b"
"""What the own checks were proven against: the installed SDK's surface schemas of a
``tools/call`` result in both eras and the source of the routing checks they mirror."""


def _result_type(version: str) -> Any:
    """The SDK's surface type of a ``tools/call`` result (a model, or a union of them)."""
    return surface.SERVER_RESULTS[("tools/call", version)]


def _sdk_fingerprint() -> str:
    parts = [
        json.dumps(
            TypeAdapter[Any](_result_type(version)).json_schema(by_alias=True),
            sort_keys=True,
        )
        for version in VERSIONS
    ]
    parts += [
        inspect.getsource(function)
        for function in (
            classify_inbound_request,
            find_duplicated_routing_header,
            inbound.decode_header_value,
            surface.serialize_server_result,
        )
    ]
    parts.append(json.dumps(dict(inbound.NAME_BEARING_METHODS), sort_keys=True))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def test_the_sdk_checks_are_the_ones_ours_were_proven_against() -> None:
    """A new SDK may check otherwise: then review `_own_checks` against it, run this
    file, and record the new fingerprint here."""
    assert _sdk_fingerprint() == SDK_FINGERPRINT
