"""What a running tool sees of its call: ids, session scope, progress, logging, and
requests to the client (sampling, elicitation)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import msgspec

from nativemcp.protocol import (
    INPUT_KEY_META_KEY,
    PYTHON_LOG_LEVELS,
    ClientRequestError,
    ContentBlock,
    TextContent,
)
from nativemcp.protocol.wire import (
    Caller,
    LogLevel,
    LogNotification,
    Notification,
    ProgressNotification,
    ResourceUpdatedNotification,
)

__all__ = [
    "ClientRequest",
    "Context",
    "ElicitResult",
    "LogLevel",
    "LogNotification",
    "Notification",
    "ProgressNotification",
    "ResourceUpdatedNotification",
    "SampleResult",
]


Notify = Callable[[Notification], Awaitable[None]]

ClientRequest = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""Sends a request to the caller's client: ``(method, params) -> result``.

Params and result have the spec's JSON shapes (e.g. ``"sampling/createMessage"``); it
raises `ClientRequestError`."""


class SampleResult(msgspec.Struct, kw_only=True, rename="camel"):
    """What the client's model answered to `Context.sample`."""

    role: Literal["user", "assistant"]
    content: ContentBlock
    model: str
    stop_reason: str | None = None

    @property
    def text(self) -> str:
        """The answer's text ('' when the content is not text)."""
        return self.content.text if isinstance(self.content, TextContent) else ""


class ElicitResult(msgspec.Struct, kw_only=True):
    """The user's answer to `Context.elicit`: ``content`` is set when ``accept``ed."""

    action: Literal["accept", "decline", "cancel"]
    content: Any = None


def _object_schema(schema: Any) -> dict[str, Any]:
    """A flat JSON object schema (what elicitation accepts) for a type or a schema dict."""
    if isinstance(schema, dict):
        return schema
    (top,), components = msgspec.json.schema_components([schema], ref_template="#/$defs/{name}")
    ref = top.get("$ref", "")
    body = dict(components[ref.removeprefix("#/$defs/")]) if ref else dict(top)
    body.pop("title", None)
    if body.get("type") != "object":
        raise TypeError(f"an elicitation schema must describe an object, not {schema!r}")
    return body


async def _drop(_: Notification) -> None:
    return None


class Context:
    """Handed to a tool that declares a parameter annotated ``Context``.

    Progress and log messages reach the caller in order, before the result.
    """

    def __init__(
        self,
        *,
        server_name: str,
        tool_name: str,
        request_id: int | str | None = None,
        session_id: str | None = None,
        thread_id: str | None = None,
        data_dir: Path | None = None,
        notify: Notify | None = None,
        request: ClientRequest | None = None,
        caller: Caller | None = None,
    ) -> None:
        self.server_name = server_name
        self.tool_name = tool_name
        self.request_id = request_id
        self.session_id = session_id
        self.thread_id = thread_id
        self.caller = caller
        """Who is calling: the authenticated principal (``subject``, ``client_id``,
        ``issuer``, ``scopes``) when ``nativemcp serve`` checks OAuth access tokens;
        None otherwise (stdio, a static token, a call from code)."""
        self.data_dir = data_dir
        self._notify = notify or _drop
        self._request = request
        self._logger = logging.getLogger(f"nativemcp.server.{server_name}")
        self._cancelled = False

    @property
    def cancelled(self) -> bool:
        """True once the call was cancelled (its caller timed out or gave up).

        A sync tool runs in a worker thread that cannot be interrupted: a long one
        checks this between steps and returns early (its result is discarded).
        """
        return self._cancelled

    def cancel(self) -> None:
        """Mark the call cancelled (done by the server when the call is cancelled)."""
        self._cancelled = True

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell the caller how far the call has come (``progress`` of ``total``)."""
        await self._notify(ProgressNotification(progress=progress, total=total, message=message))

    async def log(self, level: LogLevel, data: Any, *, logger: str | None = None) -> None:
        """Send a log message to the caller (and to this process's ``logging``)."""
        self._logger.log(PYTHON_LOG_LEVELS.get(level, logging.INFO), "%s: %s", self.tool_name, data)
        await self._notify(LogNotification(level=level, data=data, logger=logger))

    async def resource_updated(self, uri: str) -> None:
        """Tell the clients subscribed to ``uri`` that it changed."""
        await self._notify(ResourceUpdatedNotification(uri=uri))

    async def debug(self, data: Any) -> None:
        """`log` at debug level."""
        await self.log("debug", data)

    async def info(self, data: Any) -> None:
        """`log` at info level."""
        await self.log("info", data)

    async def warning(self, data: Any) -> None:
        """`log` at warning level."""
        await self.log("warning", data)

    async def error(self, data: Any) -> None:
        """`log` at error level."""
        await self.log("error", data)

    async def request_client(
        self, method: str, params: dict[str, Any], *, key: str | None = None
    ) -> dict[str, Any]:
        """Send an MCP request to the caller's client and return its result (raw JSON).

        ``key`` names the request where the client answers it by name: under ``serve``,
        a 2026-07-28 client gets it under that key in the call's ``inputRequests``
        (default: numbered); a key already waiting in the call is numbered instead.

        Raises:
            ClientRequestError: no client can answer (no handler configured), or it
                answered with an error.
        """
        if self._request is None:
            raise ClientRequestError(
                f"tool {self.tool_name!r} sent {method!r} to its client, but no client "
                "can answer here: serve it over MCP to a client that supports it, or give "
                "the pool a handler (WorkerPool(sampling_handler=..., elicitation_handler=...))"
            )
        if key is not None:
            meta = {**(params.get("_meta") or {}), INPUT_KEY_META_KEY: key}
            params = {**params, "_meta": meta}
        return await self._request(method, params)

    async def sample(
        self,
        messages: str | list[Any],
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        key: str | None = None,
    ) -> SampleResult:
        """Ask the client's model for a completion (MCP ``sampling/createMessage``).

        ``messages`` is one user text, or a list of ``{"role", "content"}`` messages;
        ``key`` names the request (see `request_client`).

        Raises:
            ClientRequestError: nobody can sample here, or the client refused.
        """
        if isinstance(messages, str):
            wire: list[Any] = [{"role": "user", "content": {"type": "text", "text": messages}}]
        else:
            wire = msgspec.to_builtins(messages)
        params: dict[str, Any] = {"messages": wire, "maxTokens": max_tokens}
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        if temperature is not None:
            params["temperature"] = temperature
        if stop_sequences is not None:
            params["stopSequences"] = stop_sequences
        result = await self.request_client("sampling/createMessage", params, key=key)
        try:
            return msgspec.convert(result, SampleResult)
        except msgspec.ValidationError as exc:
            raise ClientRequestError(f"the client's sampling result is malformed: {exc}") from exc

    async def elicit(self, message: str, schema: Any, *, key: str | None = None) -> ElicitResult:
        """Ask the user for input shaped by ``schema`` (MCP ``elicitation/create``, form mode).

        ``schema`` is a type (a Struct, dataclass or TypedDict of primitive fields; the
        accepted content is converted to it) or a JSON Schema object; ``key`` names the
        request (see `request_client`).

        Raises:
            ClientRequestError: nobody can ask the user here, the client refused, or the
                answer does not fit the schema.
        """
        params = {"message": message, "requestedSchema": _object_schema(schema)}
        result = await self.request_client("elicitation/create", params, key=key)
        try:
            answer = msgspec.convert(result, ElicitResult)
            if answer.action == "accept" and not isinstance(schema, dict):
                answer.content = msgspec.convert(answer.content or {}, schema)
        except msgspec.ValidationError as exc:
            raise ClientRequestError(
                f"the client's elicitation answer is malformed: {exc}"
            ) from exc
        return answer
