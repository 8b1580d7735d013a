"""Typed proxies: one method per tool, returning the unwrapped, typed value.

``await proxy.list_content(store_id=s)`` calls the tool and unwraps the response into
the tool's own return type: the type named in the tool's ``_meta`` (imported here, never
evaluated from text) or, for a typed interface, the method's annotation. A result whose
type cannot be imported here comes back as `Record` objects, so attribute access such
as ``.contents`` still works.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping
from typing import Any

import msgspec

from nativemcp.protocol import NativeMCPResponse, ResourceContents, Tool, unwrap
from nativemcp.workers import (
    ClientRequest,
    CompletionRef,
    GetPromptResult,
    Prompt,
    Resource,
    ResourceTemplate,
)
from nativemcp.workers._typeref import RETURN_TYPE_META_KEY, resolve_type

from ._arguments import check_arguments, check_tool_name
from ._exceptions import ArgumentsError
from ._handle import CallScope, LogHandler, ProgressCallback, ServerHandle
from ._records import to_records

__all__ = ["ServerProxy", "ToolMethod", "coerce_arguments"]


def coerce_arguments(
    tool: str, arguments: Mapping[str, Any] | str | None, kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """Call arguments as one dict: keyword arguments, a mapping, or a JSON object string.

    Raises:
        ArgumentsError: a string that is not a JSON object, a non-mapping, a key given
            both in ``arguments`` and as a keyword, a tool name or key that is not a
            string, or a value that cannot be sent (see `check_arguments`).
    """
    tool = check_tool_name(tool)
    if isinstance(arguments, str | bytes):
        try:
            parsed = json.loads(arguments)
        except ValueError as exc:
            raise ArgumentsError(
                f"arguments for {tool!r} are a string that is not JSON ({exc}); "
                f"pass keyword arguments, a dict or a JSON object string: {arguments[:80]!r}"
            ) from exc
        arguments = parsed
    if arguments is None:
        merged: dict[str, Any] = {}
    elif isinstance(arguments, Mapping):
        merged = dict(arguments)
    else:
        raise ArgumentsError(
            f"arguments for {tool!r} must be an object, got {type(arguments).__name__}"
        )
    clash = merged.keys() & kwargs.keys()
    if clash:
        raise ArgumentsError(f"arguments for {tool!r} given twice: {', '.join(sorted(clash))}")
    merged.update(kwargs)
    check_arguments(tool, merged)
    return merged


def _scope(session_id: str | None, thread_id: str | None) -> CallScope | None:
    return (session_id, thread_id) if session_id is not None or thread_id is not None else None


class ToolMethod:
    """A bound tool: ``await method(**arguments)`` returns the typed value."""

    def __init__(self, proxy: ServerProxy, tool: Tool, result_type: Any) -> None:
        self._proxy = proxy
        self.tool = tool
        self.result_type = result_type
        self.__name__ = tool.name
        self.__doc__ = tool.description

    async def __call__(
        self,
        arguments: Mapping[str, Any] | str | None = None,
        /,
        *,
        call_timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        on_log: LogHandler | None = None,
        **kwargs: Any,
    ) -> Any:
        """Call the tool and unwrap its value.

        Tool arguments come as keywords, a mapping or a JSON object string. The call's
        own options are named so that no tool argument is taken for them (a tool may
        well have a ``timeout`` argument): ``call_timeout`` (seconds; default the
        pool's), ``on_progress`` and ``on_log``.

        Raises:
            ToolError: the tool answered with an error.
            UnwrapError: the result does not convert to the tool's type.
            WorkerError: the worker timed out, crashed or is closed.
            ArgumentsError: the arguments are not an object.
        """
        name = self.tool.name
        merged = coerce_arguments(name, arguments, kwargs)
        handle = self._proxy._handle
        timeout = self._proxy.timeout if call_timeout is None else call_timeout
        schema = self.tool.output_schema
        if self.result_type is Any:
            response = await handle.call(
                name,
                merged,
                timeout=timeout,
                on_progress=on_progress,
                on_log=on_log,
                on_request=self._proxy._on_request,
            )
            return to_records(unwrap(response, object, tool=name, output_schema=schema))
        # A known type: the handle decodes the value straight into it, skipping the text.
        return await handle.call_value(
            name,
            merged,
            self.result_type,
            schema,
            timeout=timeout,
            on_progress=on_progress,
            on_log=on_log,
            on_request=self._proxy._on_request,
        )

    def __repr__(self) -> str:
        return f"<tool {self._proxy.name}.{self.tool.name}>"


class ServerProxy:
    """The caller's side of one server: raw calls, typed tool methods and hooks."""

    def __init__(
        self,
        handle: ServerHandle,
        *,
        timeout: float,
        interface: type[Any] | None = None,
        on_request: ClientRequest | None = None,
    ) -> None:
        self._handle = handle
        self._on_request = on_request
        self._timeout = timeout
        self._interface = interface
        self._methods: dict[str, ToolMethod] = {}

    @property
    def name(self) -> str:
        """The server's name."""
        return self._handle.name

    @property
    def timeout(self) -> float:
        """The default seconds per call."""
        return self._timeout

    @property
    def tools(self) -> list[Tool]:
        """The server's tool definitions."""
        return self._handle.tools

    @property
    def backend(self) -> str:
        """``BuiltInWeb`` (worker process) or ``BuiltInNative`` (this process)."""
        return self._handle.backend

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        on_log: LogHandler | None = None,
        session_id: str | None = None,
        thread_id: str | None = None,
    ) -> NativeMCPResponse[Any]:
        """Call a tool and return the raw response (errors are responses, not raised).

        ``session_id``/``thread_id`` scope this one call (the tool's `Context` sees
        them); without them the call uses the server's scope (`switch_context`).

        Raises:
            WorkerError: the worker timed out, crashed or is closed.
            ArgumentsError: the arguments are not an object.
        """
        return await self._handle.call(
            name,
            coerce_arguments(name, arguments, {}),
            timeout=self._timeout if timeout is None else timeout,
            on_progress=on_progress,
            on_log=on_log,
            on_request=self._on_request,
            scope=_scope(session_id, thread_id),
        )

    async def list_resources(self) -> list[Resource]:
        """The server's resources."""
        found = await self._handle.feature("resources/list", {}, timeout=self._timeout)
        return msgspec.convert(found["resources"], list[Resource])

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        """The server's resource templates."""
        found = await self._handle.feature("resources/templates/list", {}, timeout=self._timeout)
        return msgspec.convert(found["resourceTemplates"], list[ResourceTemplate])

    async def read_resource(self, uri: str) -> list[ResourceContents]:
        """The contents of the resource at ``uri``.

        Raises:
            FeatureError: no resource or template of the server matches ``uri``.
            WorkerError: the worker timed out, crashed or is closed.
        """
        found = await self._handle.feature("resources/read", {"uri": uri}, timeout=self._timeout)
        return msgspec.convert(found["contents"], list[ResourceContents])

    async def list_prompts(self) -> list[Prompt]:
        """The server's prompts."""
        found = await self._handle.feature("prompts/list", {}, timeout=self._timeout)
        return msgspec.convert(found["prompts"], list[Prompt])

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> GetPromptResult:
        """The prompt ``name`` filled in with ``arguments``.

        Raises:
            FeatureError: unknown prompt, or missing/unknown arguments.
            WorkerError: the worker timed out, crashed or is closed.
        """
        found = await self._handle.feature(
            "prompts/get", {"name": name, "arguments": dict(arguments or {})}, timeout=self._timeout
        )
        return msgspec.convert(found, GetPromptResult)

    async def complete(self, ref: CompletionRef, argument: str, value: str) -> list[str]:
        """Completion suggestions for one argument of a prompt or resource template."""
        wire_ref = (
            {"type": ref.type, "name": ref.name}
            if ref.type == "ref/prompt"
            else {"type": ref.type, "uri": ref.name}
        )
        found = await self._handle.feature(
            "completion/complete",
            {"ref": wire_ref, "argument": {"name": argument, "value": value}},
            timeout=self._timeout,
        )
        return list(found["completion"]["values"])

    async def list_tools(self) -> list[Tool]:
        """Ask the server for its tools."""
        return await self._handle.list_tools(timeout=self._timeout)

    async def get_service_context(self) -> str:
        """The server's text for an agent's system prompt."""
        return await self._handle.get_service_context(timeout=self._timeout)

    async def switch_context(self, session_id: str | None, thread_id: str | None = None) -> None:
        """Scope later calls to a session and thread."""
        await self._handle.switch_context(session_id, thread_id, timeout=self._timeout)

    async def ping(self) -> None:
        """Round-trip an empty message to the server."""
        await self._handle.ping(timeout=self._timeout)

    def _result_type(self, tool: Tool) -> Any:
        if self._interface is not None:
            method = getattr(self._interface, tool.name, None)
            if method is not None:
                try:
                    return typing.get_type_hints(method).get("return", Any)
                except (NameError, TypeError):
                    return Any
        return resolve_type((tool.meta or {}).get(RETURN_TYPE_META_KEY))

    def __getattr__(self, name: str) -> ToolMethod:
        if name.startswith("_"):
            raise AttributeError(name)
        method = self._methods.get(name)
        if method is not None:
            return method
        for tool in self._handle.tools:
            if tool.name == name:
                method = ToolMethod(self, tool, self._result_type(tool))
                self._methods[name] = method
                return method
        available = ", ".join(tool.name for tool in self._handle.tools) or "(none)"
        raise AttributeError(f"server {self.name!r} has no tool {name!r}; tools: {available}")

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *(tool.name for tool in self._handle.tools)})

    def __repr__(self) -> str:
        return f"<ServerProxy {self.name!r} ({self.backend}, {len(self.tools)} tools)>"
