"""The fast path's remembered listing checks answer exactly as the SDK's checks do: the
same value, version and method get the SDK's outcome, remembered or not."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp_types import methods as surface
from pydantic import ValidationError

from nativemcp.proxy.serve.fast._listing_checks import ListingChecks

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ENVELOPE = {types.PROTOCOL_VERSION_META_KEY: MODERN, types.CLIENT_CAPABILITIES_META_KEY: {}}
"""A 2026-07-28 request's envelope (client info is optional)."""
TOOL = {"name": "t", "inputSchema": {"type": "object", "properties": {"a": {"default": 1}}}}


def _listing(*tools: dict[str, Any]) -> dict[str, Any]:
    """A ``tools/list`` result as the fast path dumps it before the SDK's check."""
    result = types.ListToolsResult.model_validate({"tools": list(tools)})
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def _sdk_accepts(method: str, version: str, params: Any) -> bool:
    try:
        surface.validate_client_request(method, version, params)
    except (KeyError, ValueError):
        return False
    return True


CASES = [
    ("tools/list", MODERN, {"_meta": ENVELOPE}),
    ("tools/list", MODERN, {}),  # no envelope: refused
    ("tools/list", LEGACY, {}),
    ("tools/list", LEGACY, None),
    ("ping", LEGACY, None),
    ("ping", MODERN, {"_meta": ENVELOPE}),  # gone from 2026-07-28
    ("prompts/list", MODERN, {"_meta": ENVELOPE, "cursor": 5}),
    ("prompts/list", MODERN, {"_meta": ENVELOPE, "cursor": "5"}),
    ("server/discover", LEGACY, {}),
    ("tools/call", LEGACY, {"name": "t"}),
    ("tools/call", LEGACY, {"name": 5}),
    ("tools/call", MODERN, {"_meta": ENVELOPE, "name": "t", "arguments": {"a": [1, None]}}),
    ("tools/call", MODERN, {"_meta": ENVELOPE, "name": "t", "arguments": {"a": {"b": 2}}}),
    ("tools/call", MODERN, {"_meta": ENVELOPE, "name": "t", "arguments": ["a"]}),
    ("tools/call", MODERN, {"_meta": ENVELOPE, "name": "t", "arguments": "a"}),
    ("tools/call", MODERN, {"_meta": ENVELOPE, "name": "t", "arguments": None}),
    ("tools/call", MODERN, {"_meta": ENVELOPE, "name": 5, "arguments": {"a": 1}}),
    ("tools/call", MODERN, {"_meta": {}, "name": "t", "arguments": {"a": 1}}),
]


def test_each_request_gets_the_sdks_outcome_first_and_remembered() -> None:
    checks = ListingChecks()
    for _ in range(2):  # the second pass answers from what was remembered
        for method, version, params in CASES:
            expected = _sdk_accepts(method, version, params)
            assert checks.request_valid(method, version, params) is expected, (method, version)


def test_the_same_params_in_another_version_are_checked_for_that_version() -> None:
    checks = ListingChecks()
    assert checks.request_valid("ping", LEGACY, {}) is True
    assert checks.request_valid("ping", MODERN, {}) is False
    assert checks.request_valid("tools/list", LEGACY, {"cursor": 1}) is False
    assert checks.request_valid("tools/list", LEGACY, {"cursor": 1.0}) is False
    assert checks.request_valid("tools/list", LEGACY, {"cursor": "1"}) is True


@pytest.mark.parametrize("version", [MODERN, LEGACY])
def test_a_remembered_result_is_the_sdks_and_the_callers_own(version: str) -> None:
    checks = ListingChecks()
    dumped = _listing(TOOL)
    first = checks.result("tools/list", version, dumped)
    assert first == surface.serialize_server_result("tools/list", version, dumped)
    first["_meta"] = {"stamped": True}  # the fast path stamps its own copy
    again = checks.result("tools/list", version, dumped)
    assert again == surface.serialize_server_result("tools/list", version, dumped)
    assert "_meta" not in again


def test_a_listing_with_other_values_is_not_taken_for_a_remembered_one() -> None:
    checks = ListingChecks()
    one = _listing({**TOOL, "description": "x"})
    other = _listing({**TOOL, "description": "y"})
    assert checks.result("tools/list", LEGACY, one)["tools"][0]["description"] == "x"
    assert checks.result("tools/list", LEGACY, other)["tools"][0]["description"] == "y"


def test_an_invalid_result_raises_every_time() -> None:
    checks = ListingChecks()
    for _ in range(2):
        with pytest.raises(ValidationError):
            checks.result("tools/list", LEGACY, {"tools": [{"name": "t"}]})  # no schema


def test_a_call_is_remembered_by_its_envelope_whatever_its_arguments_hold() -> None:
    checks = ListingChecks()
    call = {"_meta": ENVELOPE, "name": "t", "arguments": {"a": 1}}
    assert checks.request_valid("tools/call", MODERN, call)
    # Any object is accepted (its values are Any in every version): the first outcome
    # stands for another object, and the remembered outcomes stay one.
    other = {**call, "arguments": {"b": [{"c": None}], "d": "e"}}
    assert checks.request_valid("tools/call", MODERN, other)
    assert len(checks._requests) == 1
    # Arguments that are not an object are checked, and refused, each time.
    for refused in (["a"], "a", 5):
        assert not checks.request_valid("tools/call", MODERN, {**call, "arguments": refused})
    assert len(checks._requests) == 1
    # Another name or envelope is another outcome, checked first.
    assert not checks.request_valid("tools/call", MODERN, {**call, "name": 5})
    assert len(checks._requests) == 2
