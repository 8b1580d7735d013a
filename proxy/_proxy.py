"""Typed proxies: one method per tool, returning the unwrapped, typed value.

``await proxy.list_content(store_id=s)`` calls the tool and unwraps the response into
the tool's own return type: the type named in the tool's ``_meta`` (imported here, never
evaluated from text, and only for the pool's own servers: an external server never
makes this process import a module it names) or, for a typed interface, the method's
annotation. A result whose type cannot be imported here comes back as `Record` objects,
so attribute access such as ``.contents`` still works.

Tool names never hide behind the proxy's own names: ``proxy.tool(name)`` reaches every
tool, and a tool named like one of the proxy's own attributes (`PROXY_NAMES`) is an
error at lookup that says how to call it, rather than silently the proxy's method.
"""

from __future__ import annotations

import json
import keyword
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import msgspec

from nativemcp.protocol import (
    ArgumentsError,
    NativeMCPResponse,
    ResourceContents,
    Tool,
    ToolNameClash,
    quoted_name,
)
from nativemcp.protocol.wire import RETURN_TYPE_META_KEY, resolve_type
from nativemcp.workers import (
    ClientRequest,
    CompletionRef,
    GetPromptResult,
    Prompt,
    Resource,
    ResourceTemplate,
)

from ._arguments import check_arguments, check_tool_name
from ._handle import (
    DEFAULT,
    CallOptions,
    Expected,
    LogHandler,
    ProgressCallback,
    ServerHandle,
    _Default,
    merge_options,
)
from ._records import to_records
from .telemetry import TRACING, traced

__all__ = [
    "PROXY_NAMES",
    "BoundTool",
    "ServerProxy",
    "ToolMethod",
    "coerce_arguments",
    "python_name",
    "result_type",
    "server_and_interface",
]

_OPTION_KEYWORDS: Final = frozenset({"call_options", "call_timeout", "on_progress", "on_log"})
"""Keywords a tool method reads as call options, unless the tool declares an argument
of that name (then the keyword goes to the tool and options come via ``call_options``)."""


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
                f"arguments for {quoted_name(tool)} are a string that is not JSON ({exc}); "
                f"pass keyword arguments, a dict or a JSON object string: {arguments[:80]!r}"
            ) from exc
        arguments = parsed
    if arguments is None:
        merged: dict[str, Any] = {}
    elif isinstance(arguments, Mapping):
        merged = dict(arguments)
    else:
        raise ArgumentsError(
            f"arguments for {quoted_name(tool)} must be an object, got {type(arguments).__name__}"
        )
    clash = merged.keys() & kwargs.keys()
    if clash:
        raise ArgumentsError(
            f"arguments for {quoted_name(tool)} given twice: {', '.join(sorted(clash))}"
        )
    merged.update(kwargs)
    check_arguments(tool, merged)
    return merged


def python_name(tool_name: str) -> str | None:
    """The attribute a tool is reachable as: its name with ``-`` and ``.`` as ``_``.

    None when that is not a Python identifier (or is a keyword).
    """
    name = tool_name.replace("-", "_").replace(".", "_")
    if not name.isidentifier() or keyword.iskeyword(name):
        return None
    return name


def result_type(tool: Tool, interface: type[Any] | None, *, trusts_type_refs: bool) -> Any:
    """The type a typed call of ``tool`` returns: the interface method's annotation, else
    the type named in the tool's ``_meta`` (imported, never evaluated; only when the
    source ``trusts_type_refs``), else ``Any``."""
    if interface is not None:
        method = getattr(interface, tool.name, None)
        if method is not None:
            try:
                return typing.get_type_hints(method).get("return", Any)
            except (NameError, TypeError):
                return Any
    if not trusts_type_refs:
        return Any  # an external server must never make us import a module it names
    return resolve_type((tool.meta or {}).get(RETURN_TYPE_META_KEY))


class BoundTool:
    """What a typed tool method of either pool's proxy holds: the tool, the type its
    calls return, and how a result becomes that type."""

    def __init__(self, tool: Tool, result_type: Any) -> None:
        self.tool = tool
        self.result_type = result_type
        self.__name__ = tool.name
        self.__doc__ = tool.description
        self._expected = Expected(result_type, tool.output_schema)
        # With no known type, records are made from whatever value the response holds.
        self._untyped = Expected(object, tool.output_schema)


class ToolMethod(BoundTool):
    """A bound tool: ``await method(**arguments)`` returns the typed value."""

    def __init__(self, proxy: ServerProxy, tool: Tool, result_type: Any) -> None:
        super().__init__(tool, result_type)
        self._proxy = proxy
        properties = (tool.input_schema or {}).get("properties")
        declared = set(properties) if isinstance(properties, Mapping) else set()
        # Option keywords a tool declares as arguments go to the tool.
        self._options_kw = _OPTION_KEYWORDS - declared

    def _split(self, kwargs: dict[str, Any]) -> CallOptions | None:
        if self._options_kw.isdisjoint(kwargs):
            return None
        options = kwargs.pop("call_options", None) if "call_options" in self._options_kw else None
        if options is not None and not isinstance(options, CallOptions):
            raise TypeError(f"call_options must be a CallOptions, not {type(options).__name__}")
        options = options or CallOptions()
        changes: dict[str, Any] = {}
        if "call_timeout" in self._options_kw and "call_timeout" in kwargs:
            legacy = kwargs.pop("call_timeout")
            changes["timeout"] = DEFAULT if legacy is None else legacy
        for name in ("on_progress", "on_log"):
            if name in self._options_kw and name in kwargs:
                changes[name] = kwargs.pop(name)
        return msgspec.structs.replace(options, **changes) if changes else options

    async def __call__(
        self, arguments: Mapping[str, Any] | str | None = None, /, **kwargs: Any
    ) -> Any:
        """Call the tool and unwrap its value.

        Tool arguments come as keywords, a mapping or a JSON object string. The call's
        own options come as ``call_options=CallOptions(timeout=..., on_progress=...,
        on_log=...)``; ``on_progress``, ``on_log`` and ``call_timeout`` (the older
        spelling of the time limit) are read as keywords too. A tool that declares an
        argument by one of these names gets it: the keyword is the tool's.

        Raises:
            ToolError: the tool answered with an error.
            UnwrapError: the result does not convert to the tool's type.
            ServerError: the server timed out, crashed or is closed.
            ArgumentsError: the arguments are not an object.
        """
        name = self.tool.name
        if arguments is None and self._options_kw.isdisjoint(kwargs):
            # The usual call, keywords only: they are this call's own fresh dict, so
            # they are sent as they are, without merging into a copy.
            given = None
            check_arguments(check_tool_name(name), kwargs)
            merged = kwargs
        else:
            given = self._split(kwargs) if kwargs else None
            merged = coerce_arguments(name, arguments, kwargs)
        proxy = self._proxy
        # The common case (no options) reuses one resolved object.
        options = proxy._defaults if given is None else proxy._resolve(given)
        if TRACING.tracer is None:  # the usual case: no span, no call in between
            return await self._run(proxy._handle, name, merged, options)
        scope = options.scope
        return await traced(
            proxy._handle.name,
            "tools/call",
            name,
            lambda: self._run(proxy._handle, name, merged, options),
            session_id=scope[0] if scope is not None else None,
        )

    def _run(
        self, handle: ServerHandle, name: str, arguments: dict[str, Any], options: CallOptions
    ) -> Awaitable[Any]:
        if self.result_type is Any:
            return self._records(handle, name, arguments, options)
        # A known type: the handle decodes the value straight into it, skipping the text.
        return handle.call_value(name, arguments, self._expected, options)

    async def _records(
        self, handle: ServerHandle, name: str, arguments: dict[str, Any], options: CallOptions
    ) -> Any:
        response = await handle.call(name, arguments, options)
        return to_records(self._untyped.unwrap(response, name))

    def __repr__(self) -> str:
        return f"<tool {self._proxy._handle.name}.{self.tool.name}>"


def _completion_ref(ref: CompletionRef | Mapping[str, Any]) -> dict[str, str]:
    """``ref`` as the spec's completion reference (``ref/prompt`` by name, ``ref/resource``
    by URI).

    Raises:
        ValueError: not a `CompletionRef` nor a well-formed reference object.
    """
    if isinstance(ref, CompletionRef):
        key = "name" if ref.type == "ref/prompt" else "uri"
        return {"type": ref.type, key: ref.name}
    if isinstance(ref, Mapping):
        kind = ref.get("type")
        found = {"ref/prompt": "name", "ref/resource": "uri"}.get(str(kind))
        if found is None:
            raise ValueError(
                f"a completion ref's 'type' is 'ref/prompt' or 'ref/resource', not {kind!r}"
            )
        key = found
        target = ref.get(key)
        if not isinstance(target, str) or not target:
            raise ValueError(f"a {kind} completion ref needs a {key!r} string, got {dict(ref)!r}")
        return {"type": str(kind), key: target}
    raise ValueError(
        f"a completion ref is a CompletionRef or a dict like "
        f'{{"type": "ref/prompt", "name": ...}}, not {type(ref).__name__}'
    )


class ServerProxy:
    """The caller's side of one server: raw calls, typed tool methods and hooks."""

    def __new__(cls, handle: ServerHandle, **options: Any) -> ServerProxy:
        # ``options`` are `__init__`'s; only the handle's tools matter here.
        clashes = {
            attr: tool.name
            for tool in handle.tools
            if (attr := python_name(tool.name)) is not None and attr in PROXY_NAMES
        }
        if not clashes or cls is not ServerProxy:
            return super().__new__(cls)
        # Rare: a tool named like one of ours. Both meanings are refused at lookup,
        # with the way to each, instead of silently answering with one of them.
        attributes = {attr: _Clash(attr, tool) for attr, tool in clashes.items()}
        return super().__new__(type("ServerProxy", (ServerProxy,), attributes))

    def __init__(
        self,
        handle: ServerHandle,
        *,
        timeout: float | None,
        interface: type[Any] | None = None,
        on_request: ClientRequest | None = None,
    ) -> None:
        self._handle = handle
        self._timeout = timeout
        self._on_request = on_request
        # The common case (no options given) reuses one resolved object.
        self._defaults = CallOptions(timeout=timeout, on_request=on_request).with_default(None)
        self._interface = interface
        self._methods: dict[str, ToolMethod] = {}

    @property
    def name(self) -> str:
        """The server's name."""
        return str(self._handle.name)

    @property
    def description(self) -> str:
        """The server's description."""
        return str(self._handle.description)

    @property
    def timeout(self) -> float | None:
        """The default seconds per call (None: no limit)."""
        return self._timeout

    @property
    def tools(self) -> list[Tool]:
        """The server's tool definitions."""
        return list(self._handle.tools)

    @property
    def backend(self) -> str:
        """Where the server runs, as its `BackendType` value.

        ``BuiltInWeb`` (worker process), ``BuiltInNative`` (this process) or
        ``ExternalMCP`` (an external MCP server)."""
        return str(self._handle.backend)

    def _resolve(self, options: CallOptions) -> CallOptions:
        """``options`` with the default time limit and the pool's request handler."""
        return options.resolve(self._timeout, self._on_request)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        timeout: float | _Default | None = DEFAULT,
        on_progress: ProgressCallback | None = None,
        on_log: LogHandler | None = None,
        options: CallOptions | None = None,
        session_id: str | None = None,
        thread_id: str | None = None,
    ) -> NativeMCPResponse[Any]:
        """Call a tool and return the raw response (errors are responses, not raised).

        ``timeout``: seconds, ``None`` for no limit, ``DEFAULT`` (the default) for the
        pool's; or pass every option at once as ``options``. ``session_id`` /
        ``thread_id`` scope this one call (the tool's `Context` sees them); without
        them the call uses the server's scope (`switch_context`).

        Raises:
            ServerError: the server timed out, crashed or is closed.
            ArgumentsError: the arguments are not an object.
        """
        scoped = session_id is not None or thread_id is not None
        scope = (session_id, thread_id) if scoped else None
        merged = coerce_arguments(name, arguments, {})
        resolved = self._resolve(merge_options(options, timeout, on_progress, on_log, scope))
        return await traced(
            self._handle.name,
            "tools/call",
            name,
            lambda: self._handle.call(name, merged, resolved),
            session_id=session_id,
        )

    async def _feature(
        self, method: str, params: dict[str, Any], target: str | None = None, **span: Any
    ) -> Any:
        return await traced(
            self._handle.name,
            method,
            target,
            lambda: self._handle.feature(method, params, self._defaults),
            **span,
        )

    async def list_resources(self) -> list[Resource]:
        """The server's resources."""
        found = await self._feature("resources/list", {})
        return msgspec.convert(found["resources"], list[Resource])

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        """The server's resource templates."""
        found = await self._feature("resources/templates/list", {})
        return msgspec.convert(found["resourceTemplates"], list[ResourceTemplate])

    async def read_resource(self, uri: str) -> list[ResourceContents]:
        """The contents of the resource at ``uri``.

        Raises:
            FeatureError: no resource or template of the server matches ``uri``.
            ServerError: the server timed out, crashed or is closed.
        """
        found = await self._feature("resources/read", {"uri": uri}, uri=uri)
        return msgspec.convert(found["contents"], list[ResourceContents])

    async def list_prompts(self) -> list[Prompt]:
        """The server's prompts."""
        found = await self._feature("prompts/list", {})
        return msgspec.convert(found["prompts"], list[Prompt])

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> GetPromptResult:
        """The prompt ``name`` filled in with ``arguments``.

        Raises:
            FeatureError: unknown prompt, or missing/unknown arguments.
            ServerError: the server timed out, crashed or is closed.
        """
        found = await self._feature(
            "prompts/get", {"name": name, "arguments": dict(arguments or {})}, name
        )
        return msgspec.convert(found, GetPromptResult)

    async def complete(
        self, ref: CompletionRef | Mapping[str, Any], argument: str, value: str
    ) -> list[str]:
        """Completion suggestions for one argument of a prompt or resource template.

        ``ref`` is a `CompletionRef` or the spec's reference object:
        ``{"type": "ref/prompt", "name": ...}`` or ``{"type": "ref/resource", "uri": ...}``.

        Raises:
            ValueError: ``ref`` is neither (the message says what is missing).
            FeatureError: the server has no such prompt or template.
        """
        wire_ref = _completion_ref(ref)
        found = await self._feature(
            "completion/complete",
            {"ref": wire_ref, "argument": {"name": argument, "value": value}},
        )
        return list(found["completion"]["values"])

    def tool(self, name: str) -> ToolMethod:
        """The typed method of tool ``name`` (any tool, whatever its name).

        Raises:
            AttributeError: the server has no such tool (the message lists its tools).
        """
        method = self._methods.get(name)
        if method is not None:
            return method
        for tool in self._handle.tools:
            if tool.name == name:
                method = ToolMethod(self, tool, self._result_type(tool))
                self._methods[name] = method
                return method
        waiting = self._waiting(name)
        if waiting is not None:
            return waiting
        available = ", ".join(tool.name for tool in self._handle.tools) or "(none)"
        raise AttributeError(
            f"server {self._handle.name!r} has no tool {quoted_name(name)}; tools: {available}"
        )

    def _waiting(self, name: str) -> ToolMethod | None:
        """A method for tool ``name`` of a server that waits for authorization (None: the
        server does not wait): its tools are not listed yet, and a call gets what every
        call to it gets, the needs-authorization text (a `ToolError`), or the tool's
        answer once a grant came. Not kept: the listed tool's method replaces it."""
        if getattr(self._handle, "needs_authorization", None) is None:
            return None
        unlisted = Tool(name=name, input_schema={"type": "object"})
        return ToolMethod(self, unlisted, self._result_type(unlisted))

    async def list_tools(self) -> list[Tool]:
        """Ask the server for its tools."""
        return list(
            await traced(
                self._handle.name,
                "tools/list",
                None,
                lambda: self._handle.list_tools(self._defaults),
            )
        )

    async def get_service_context(self) -> str:
        """The server's text for an agent's system prompt."""
        return str(await self._handle.get_service_context(self._defaults))

    async def switch_context(self, session_id: str | None, thread_id: str | None = None) -> None:
        """Scope later calls to a session and thread."""
        await self._handle.switch_context(session_id, thread_id, self._defaults)

    async def ping(self) -> None:
        """Round-trip an empty message to the server."""
        await traced(self._handle.name, "ping", None, lambda: self._handle.ping(self._defaults))

    def _result_type(self, tool: Tool) -> Any:
        return result_type(tool, self._interface, trusts_type_refs=self._handle.trusts_type_refs)

    def __getattr__(self, name: str) -> ToolMethod:
        if name.startswith("_"):
            raise AttributeError(name)
        method = self._methods.get(name)
        if method is not None:
            return method
        tools = self._handle.tools
        if any(tool.name == name for tool in tools):
            method = self.tool(name)
        else:
            # `get-sum` answers as `get_sum` when no other tool reads the same.
            matches = [tool.name for tool in tools if python_name(tool.name) == name]
            if len(matches) > 1:
                raise AttributeError(
                    f"server {self._handle.name!r}: {name!r} could be any of the tools "
                    f"{', '.join(matches)}; use proxy.tool(name) or call_tool(name, ...)"
                )
            if not matches and (waiting := self._waiting(name)) is not None:
                return waiting
            if not matches:
                available = ", ".join(tool.name for tool in tools) or "(none)"
                raise AttributeError(
                    f"server {self._handle.name!r} has no tool {quoted_name(name)}; "
                    f"tools: {available}"
                )
            method = self.tool(matches[0])
        self._methods[name] = method
        return method

    def __dir__(self) -> list[str]:
        names = (python_name(tool.name) for tool in self._handle.tools)
        return sorted({*super().__dir__(), *(n for n in names if n is not None)})

    def __repr__(self) -> str:
        handle = self._handle
        return f"<ServerProxy {handle.name!r} ({handle.backend}, {len(handle.tools)} tools)>"


PROXY_NAMES: Final = frozenset(name for name in vars(ServerProxy) if not name.startswith("_"))
"""The proxy's own attribute names.

A tool by one of these names is reached through ``proxy.tool(name)`` or
``proxy.call_tool(name, ...)``."""


class _Clash:
    """A data descriptor that refuses an attribute both a tool and the proxy own."""

    def __init__(self, attr: str, tool: str) -> None:
        self.attr = attr
        self.tool = tool

    def __get__(self, proxy: Any, owner: Any = None) -> Any:
        if proxy is None:
            return self
        own = f"ServerProxy.{self.attr}" + (
            "(proxy)" if callable(getattr(ServerProxy, self.attr, None)) else ".fget(proxy)"
        )
        raise ToolNameClash(
            f"server {proxy._handle.name!r} has a tool {self.tool!r}, which the proxy's own "
            f"{self.attr!r} would hide: call the tool with proxy.tool({self.tool!r})(...) or "
            f"proxy.call_tool({self.tool!r}, ...); the proxy's own is {own}"
        )

    def __set__(self, proxy: Any, value: Any) -> None:
        raise AttributeError(self.attr)


def server_and_interface(
    name_or_interface: str | Callable[..., Any],
) -> tuple[str, type[Any] | None]:
    """The server name and the typed interface (or None) that `WorkerPool.server` was given.

    Raises:
        TypeError: not a name, or an interface without ``server_name``.
    """
    if isinstance(name_or_interface, str):
        return name_or_interface, None
    if not isinstance(name_or_interface, type):
        raise TypeError(f"a server name or an interface class, not {name_or_interface!r}")
    declared = getattr(name_or_interface, "server_name", None)
    if not isinstance(declared, str):
        raise TypeError(
            f"{name_or_interface.__name__} needs a `server_name` class attribute naming its server"
        )
    return declared, name_or_interface
