"""The SDK's per-version checks of listings, remembered by their value (for the fast path).

`validate_client_request` and `serialize_server_result` are pure functions of the
method, the version and the JSON they are given: pydantic validations of the SDK's
fixed per-version models. A listing's request (``tools/list``: nothing but the client's
envelope) and its answer (the catalog, until it changes) repeat from request to
request, and checking a listing of many tools costs more than the rest of its answer.
So for listings only the outcome is kept, under the exact value it was computed from
(its msgpack: types, key order, NaN all kept apart), and the same value gets the same
outcome without the work. A call's request is kept by its envelope, its arguments
object left out: every version types arguments ``dict[str, Any]``, so whatever an
object holds, the outcome is the same. A call's result differs call by call: it is
always checked afresh.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec
from mcp_types import methods as surface

__all__ = ["LISTINGS", "ListingChecks"]

LISTINGS: Final = frozenset(
    {"tools/list", "resources/list", "prompts/list", "server/discover", "ping"}
)
"""The methods whose checks are remembered."""
_KEPT: Final = 256
"""Outcomes kept per kind; past that (many clients, or made-up params) start over."""
_ENCODER: Final = msgspec.msgpack.Encoder()


def _key(method: str, version: str, value: Any) -> tuple[str, str, bytes] | None:
    if method not in LISTINGS:
        return None
    return _packed(method, version, value)


def _request_key(
    method: str, version: str, params: Mapping[str, Any] | None
) -> tuple[str, str, bytes] | None:
    if method == "tools/call" and params is not None and isinstance(params.get("arguments"), dict):
        # Every version types a call's arguments `dict[str, Any] | None`: an object's
        # values cannot change the outcome, so the call is remembered by its envelope.
        params = {**params, "arguments": {}}
    elif method not in LISTINGS:
        return None
    return _packed(method, version, params)


def _packed(method: str, version: str, value: Any) -> tuple[str, str, bytes] | None:
    try:
        return method, version, _ENCODER.encode(value)
    except (OverflowError, TypeError):  # an integer msgpack cannot hold: not remembered
        return None


class ListingChecks:
    """The SDK's surface checks, remembered for `LISTINGS` by their value (and a
    ``tools/call`` request by its envelope: its name and ``_meta``)."""

    def __init__(self) -> None:
        self._requests: dict[tuple[str, str, bytes], bool] = {}
        self._results: dict[tuple[str, str, bytes], dict[str, Any]] = {}

    def request_valid(self, method: str, version: str, params: Mapping[str, Any] | None) -> bool:
        """Whether the SDK's `validate_client_request` accepts the request (False: it
        refuses it, or the version does not know the method)."""
        key = _request_key(method, version, params)
        known = self._requests.get(key) if key is not None else None
        if known is not None:
            return known
        try:
            surface.validate_client_request(method, version, params)
        except (KeyError, ValueError):  # ValidationError is a ValueError
            valid = False
        else:
            valid = True
        if key is not None:
            if len(self._requests) >= _KEPT:
                self._requests.clear()
            self._requests[key] = valid
        return valid

    def result(self, method: str, version: str, dumped: dict[str, Any]) -> dict[str, Any]:
        """`serialize_server_result` of ``dumped``: a dict of the caller's own (its
        values may be shared with another answer's, and are only read).

        Raises:
            pydantic.ValidationError: the result is not valid for ``version`` (never
                remembered).
        """
        key = _key(method, version, dumped)
        if key is None:
            return surface.serialize_server_result(method, version, dumped)
        known = self._results.get(key)
        if known is None:
            known = surface.serialize_server_result(method, version, dumped)
            if len(self._results) >= _KEPT:
                self._results.clear()
            self._results[key] = known
        return dict(known)
