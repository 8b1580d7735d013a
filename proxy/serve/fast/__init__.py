"""The fast path: plain stateless requests answered without the SDK's session machinery.

`_fast_path` (a 2026-07-28 or 2025-11-25 ``tools/call``, ``tools/list`` and the other
plain methods, checked by the SDK's own rules and answered from the bridge's methods;
anything else falls through to the SDK's session manager, decided per request),
`_listing_checks` (a listing's checked outcome remembered by value), `_own_checks` (the
routing checks and a plain result's check, proven equal to the SDK's), `_call_results` (a
plain tool result dumped as the SDK's model would dump it), `_reply` (one answer, written
as the SDK writes it: JSON, or an event stream in either era, its pings and errors) and
`_window` (the JSON answer that turns into an event stream once a tool logs or the call
runs long). What the SDK writes inline or keeps private comes through
`nativemcp.proxy._sdk_seam`. This
room imports the protocol's public names, the official SDK, `serve/_bridge`,
`serve/_apps`, `serve/_request_ids`, `serve/auth` and `serve/tasks`; only
`serve/_transports` imports it.
"""

from ._fast_path import FastPath as FastPath

__all__ = ["FastPath"]
