"""The server-definition API: a named server and its tools, declared on typed functions.

```python
server = Server("greeter", description="Says hello")

@server.tool
def greet(name: str, times: int = 1) -> Greeting:
    return Greeting(text=" ".join([f"Hello, {name}!"] * times))
```

Input and output JSON Schemas come from the annotations (msgspec Structs, dataclasses,
TypedDicts, plain types). A tool returns a plain typed value, and the server builds the
response: rich text (the tool's renderer, or a readable default) plus structured
content; or it returns a full `NativeMCPResponse` built with the protocol constructors.
`Server.call_tool` never raises for a failing tool or bad arguments: it answers with an
error response, so the worker keeps serving (what arguments and results become:
`_tool_results`; a tool's schemas and spec: `_tool_spec`).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import logging
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, overload

import anyio.to_thread
import msgspec

from nativemcp.protocol import (
    APP_MIME_TYPE,
    AppCsp,
    AppPermission,
    AppVisibility,
    NativeMCPResponse,
    ResourceContents,
    Tool,
    ToolAnnotations,
    app_resource_meta,
    resolved,
    tool_ui_meta,
    validate_tool_name,
)
from nativemcp.protocol.wire import Caller

from ._context import ClientRequest, Context, Notify
from ._resources import (
    CompletionHook,
    CompletionRef,
    GetPromptResult,
    Prompt,
    Resource,
    ResourceTemplate,
    ServerFeatures,
)
from ._threads import ToolThreads
from ._tool_results import failure_response, prepare_call, value_response
from ._tool_spec import Renderer, ToolSpec, build_spec

__all__ = ["Server"]

F = TypeVar("F", bound=Callable[..., Any])
_logger = logging.getLogger("nativemcp.server")
_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"

TOOL_THREADS: Final = 32
"""Sync tools of one server running at once in worker threads; more calls wait their turn
(calls that were abandoned, by a timeout or a cancelled caller, no longer count)."""


def _import_server(module: str, attribute: str) -> Server:
    server = getattr(importlib.import_module(module), attribute)
    if not isinstance(server, Server):
        raise TypeError(f"{module}:{attribute} is {type(server).__name__}, not a Server")
    return server


class Server:
    """A named MCP tool server: tools, plus optional service-context and scope hooks.

    Args:
        name: the server's name (``[A-Za-z0-9_.-]``, no ``__``).
        version: the server's version, reported at the worker handshake.
        description: one line on what the server offers.
    """

    def __init__(self, name: str, *, version: str = "0.1.0", description: str = "") -> None:
        validate_tool_name(name, what="server name")
        if "__" in name:
            raise ValueError(f"server name {name!r} must not contain '__'")
        self.name = name
        self.version = version
        self.description = description
        # Where the server is defined, so a worker process can import it by reference.
        caller = sys._getframe(1)
        self._module: str | None = caller.f_globals.get("__name__")
        # A server built inside a function cannot be imported by a worker; say which.
        self._defined_in: str | None = (
            None if caller.f_code.co_name == "<module>" else caller.f_code.co_name
        )
        self.session_id: str | None = None
        self.thread_id: str | None = None
        self.data_dir: Path | None = None
        self._tools: dict[str, ToolSpec] = {}
        self._service_context: Callable[[], str | Awaitable[str]] | None = None
        self._switch_hook: Callable[[str | None, str | None], Any] | None = None
        self._shutdown_hooks: list[Callable[[], Any]] = []
        self._threads = ToolThreads(TOOL_THREADS)
        self._features = ServerFeatures()

    def __reduce__(self) -> tuple[Any, ...]:
        # Tools hold functions and generated types that do not pickle by value; a
        # worker imports the server by reference instead, as multiprocessing does for
        # module-level functions (the spawned child re-imports the main module too).
        reference = self._reference()
        if reference is None:
            raise TypeError(self._not_importable_message())
        return (_import_server, reference)

    def _reference(self) -> tuple[str, str] | None:
        """``(module, attribute)`` a worker process imports this server by, or None."""
        module = sys.modules.get(self._module or "")
        for attribute, value in vars(module).items() if module else ():
            if value is self:
                return (self._module or "", attribute)
        return None

    def _not_importable_message(self) -> str:
        where = (
            f"is defined inside the function {self._defined_in}()"
            if self._defined_in
            else f"is not a module-level attribute of {self._module}"
        )
        return (
            f"server {self.name!r} {where}, so a worker process cannot import it: define "
            "it at module level, or pass a factory or a 'module:attribute' string to the pool"
        )

    # -- declaring -------------------------------------------------------------------

    @overload
    def tool(self, fn: F, /) -> F: ...
    @overload
    def tool(
        self,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        render: Renderer | None = None,
        annotations: ToolAnnotations | None = None,
        inline: bool = False,
        threaded: bool = True,
        input_schema: dict[str, Any] | None = None,
        ui: str | None = None,
        visibility: Sequence[AppVisibility] | None = None,
    ) -> Callable[[F], F]: ...
    def tool(
        self,
        fn: Any = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        render: Renderer | None = None,
        annotations: ToolAnnotations | None = None,
        inline: bool = False,
        threaded: bool = True,
        input_schema: dict[str, Any] | None = None,
        ui: str | None = None,
        visibility: Sequence[AppVisibility] | None = None,
    ) -> Any:
        """Declare a tool; use bare (``@server.tool``) or with options.

        Args:
            name: the tool's name (default: the function's name).
            title: a human-readable title.
            description: what the tool does (default: the function's docstring).
            render: turns the returned value into the text the model reads.
            annotations: behaviour hints (read-only, destructive, ...).
            inline: run a sync tool on the spot (in a worker: on the thread reading
                the calls; in process: on the event loop) rather than on a thread of its
                own. Only for tiny, pure functions (microseconds, no I/O): an inline
                tool cannot be stopped by a timeout or cancellation and holds up every
                other call while it runs; in return it costs no hand-over.
            threaded: kept for compatibility: sync tools run in worker threads unless
                ``inline`` (``threaded=False`` is the same as ``inline=True``).
            input_schema: advertise this JSON Schema instead of the one derived from the
                parameters (for keywords types cannot express, such as ``if``/``then``);
                arguments are still validated against the parameters.
            ui: the ``ui://`` URI of the tool's MCP App (a page declared with `app`):
                the tool carries it as ``_meta.ui.resourceUri``, and hosts that speak MCP
                Apps show that page with the tool's result.
            visibility: who may call a tool with a ``ui``: ``["model", "app"]`` (the
                default), ``["app"]`` for a tool only its app calls (hosts do not offer
                it to the model), ``["model"]``.

        Raises:
            ValueError: a parameter lacks an annotation, has no schema, or the name is
                taken or invalid; ``ui`` is not a ``ui://`` URI; ``visibility`` without
                ``ui``, or naming something else.
        """
        if visibility is not None and ui is None:
            raise ValueError("visibility applies to a tool with a ui: pass ui='ui://...' too")
        ui_meta = tool_ui_meta(ui, visibility) if ui is not None else None

        def register(func: F) -> F:
            spec = build_spec(
                func, name, title, description, render, annotations, inline or not threaded
            )
            if input_schema is not None:
                definition = msgspec.structs.replace(spec.definition, input_schema=input_schema)
                spec = dataclasses.replace(spec, definition=definition)
            if ui_meta is not None:
                meta = {**(spec.definition.meta or {}), "ui": ui_meta}
                definition = msgspec.structs.replace(spec.definition, meta=meta)
                spec = dataclasses.replace(spec, definition=definition)
            if spec.name in self._tools:
                raise ValueError(f"server {self.name!r} already has a tool {spec.name!r}")
            self._tools[spec.name] = spec
            return func

        return register(fn) if fn is not None else register

    def resource(
        self,
        uri: str,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
    ) -> Callable[[F], F]:
        """Declare a resource at ``uri``; with ``{placeholders}``, a resource template.

        The function returns ``str`` (text), ``bytes`` (binary), `ResourceContents`, or
        data (sent as JSON). A template's placeholders are the function's parameters.

        Raises:
            ValueError: the URI is taken, or a template's placeholders do not match.
        """

        def register(fn: F) -> F:
            self._features.add_resource(
                fn, uri, name=name, title=title, description=description, mime_type=mime_type
            )
            return fn

        return register

    def app(
        self,
        uri: str,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        csp: AppCsp | None = None,
        permissions: Sequence[AppPermission] = (),
        domain: str | None = None,
        prefers_border: bool | None = None,
    ) -> Callable[[F], F]:
        """Declare the page of an MCP App; name it in a tool's ``ui=``.

        A ``ui://`` resource whose function returns the HTML, served as
        ``text/html;profile=mcp-app`` with ``_meta.ui`` (``csp``: the origins it may
        reach, none by default; ``permissions``; ``domain``; ``prefers_border``).

        Raises:
            ValueError: ``uri`` is not a ``ui://`` URI or is taken, or a permission is
                unknown.
        """
        tool_ui_meta(uri)  # the same check a tool's ui= gets
        meta = app_resource_meta(
            csp=csp, permissions=permissions, domain=domain, prefers_border=prefers_border
        )

        def register(fn: F) -> F:
            self._features.add_resource(
                fn,
                uri,
                name=name,
                title=title,
                description=description,
                mime_type=APP_MIME_TYPE,
                meta=meta,
            )
            return fn

        return register

    def prompt(
        self,
        name: str | None = None,
        /,
        *,
        title: str | None = None,
        description: str | None = None,
    ) -> Callable[[F], F]:
        """Declare a prompt; its parameters are its (string) arguments.

        The function returns text (one user message), a `PromptMessage`, a content
        block, or a list of them.

        Raises:
            ValueError: the name is taken.
        """

        def register(fn: F) -> F:
            self._features.add_prompt(fn, name=name, title=title, description=description)
            return fn

        return register

    def resource_lister(self, fn: Callable[[], Any]) -> Callable[[], Any]:
        """Declare a hook listing the resources that exist now; sync or async.

        It is called as ``() -> list[Resource]``, e.g. for the stored items a resource
        template reads."""
        self._features.listers.append(fn)
        return fn

    def completion(self, fn: CompletionHook) -> CompletionHook:
        """Declare the completion hook: ``(ref, argument, value) -> list[str]``."""
        self._features.completion = fn
        return fn

    def service_context(self, fn: Callable[[], str | Awaitable[str]]) -> Callable[[], Any]:
        """Declare the hook that returns text for an agent's system prompt."""
        self._service_context = fn
        return fn

    def on_switch_context(
        self, fn: Callable[[str | None, str | None], Any]
    ) -> Callable[[str | None, str | None], Any]:
        """Declare the hook called with ``(session_id, thread_id)`` when the scope changes."""
        self._switch_hook = fn
        return fn

    def on_shutdown(self, fn: Callable[[], Any]) -> Callable[[], Any]:
        """Declare a hook run when the server stops (close files, databases)."""
        self._shutdown_hooks.append(fn)
        return fn

    # -- serving ---------------------------------------------------------------------

    def list_tools(self) -> list[Tool]:
        """The tool definitions, in declaration order."""
        return [spec.definition for spec in self._tools.values()]

    @property
    def tool_names(self) -> list[str]:
        """The tool names, in declaration order."""
        return list(self._tools)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        context: Context | None = None,
        value_only: bool = False,
    ) -> NativeMCPResponse[Any]:
        """Run a tool and return its response; failures become error responses.

        An unknown tool or invalid arguments answer with JSON-RPC -32602 (naming the
        available tools or the offending field); a tool that raises answers with an
        ``isError`` result carrying the exception's message (the traceback goes to the
        log, not to the model). Cancellation propagates.

        ``value_only``: the caller is code that wants the typed value, not the model's
        text: a successful result carries only ``structuredResult`` (no rendering, no
        ``structuredContent``). Errors are answered in full either way.
        """
        prepared = prepare_call(self.name, self._tools, name, arguments)
        if isinstance(prepared, NativeMCPResponse):
            return prepared
        spec, kwargs = prepared
        if context is None:
            context = self.make_context(name)
        if spec.context_param is not None:
            kwargs[spec.context_param] = context
        try:
            if spec.is_async:
                value = await spec.fn(**kwargs)
            elif spec.inline:
                value = spec.fn(**kwargs)
            else:
                # Abandoned on cancellation: the caller is freed at once and the
                # thread's slot is given back; the tool sees `context.cancelled`.
                value = await self._threads.run(lambda: spec.fn(**kwargs))
        except anyio.get_cancelled_exc_class():
            context.cancel()
            raise
        except Exception as exc:
            return failure_response(self.name, name, exc)
        return value_response(self.name, spec, value, value_only)

    def make_context(
        self,
        tool_name: str,
        *,
        request_id: int | str | None = None,
        notify: Notify | None = None,
        request: ClientRequest | None = None,
        scope: tuple[str | None, str | None] | None = None,
        caller: Caller | None = None,
    ) -> Context:
        """The `Context` of one call of ``tool_name``.

        It is in ``scope`` (the call's own ``(session_id, thread_id)``) when given, else
        in the server's current scope."""
        session_id, thread_id = scope if scope is not None else (self.session_id, self.thread_id)
        return Context(
            server_name=self.name,
            tool_name=tool_name,
            request_id=request_id,
            session_id=session_id,
            thread_id=thread_id,
            data_dir=self.data_dir,
            notify=notify,
            request=request,
            caller=caller,
        )

    def direct_mode(self, name: str) -> Literal["inline", "thread"] | None:
        """Where a worker may run ``name`` without its event loop, or None.

        ``"inline"``: on the thread that read the call; ``"thread"``: on a tool thread
        of its own; None for a tool that needs the loop (async, or taking a `Context`)
        and for an unknown name."""
        spec = self._tools.get(name)
        if spec is None or spec.is_async or spec.context_param is not None:
            return None
        return "inline" if spec.inline else "thread"

    def call_tool_now(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        value_only: bool = False,
    ) -> NativeMCPResponse[Any] | None:
        """Run an inline sync tool that takes no `Context` right here, without awaiting.

        Returns None for any other tool.

        The event loop's fast path: the tool runs to completion on the spot, with no
        task to create or schedule. Errors are responses, as with `call_tool`.
        """
        if self.direct_mode(name) != "inline":
            return None
        return self.run_direct(name, arguments, value_only=value_only)

    def run_direct(
        self, name: str, arguments: Mapping[str, Any] | None, *, value_only: bool
    ) -> NativeMCPResponse[Any]:
        """Run ``name``, a tool `direct_mode` names, on the calling thread.

        The thread may block; errors are responses, as with `call_tool`."""
        prepared = prepare_call(self.name, self._tools, name, arguments)
        if isinstance(prepared, NativeMCPResponse):
            return prepared
        spec, kwargs = prepared
        try:
            value = spec.fn(**kwargs)
        except Exception as exc:
            return failure_response(self.name, name, exc)
        return value_response(self.name, spec, value, value_only)

    async def list_resources(self) -> list[Resource]:
        """The declared resources, then those the resource listers find now."""
        return await self._features.all_resources()

    def list_resource_templates(self) -> list[ResourceTemplate]:
        """The resource templates, in declaration order."""
        return self._features.list_resource_templates()

    def list_prompts(self) -> list[Prompt]:
        """The prompts, in declaration order."""
        return self._features.list_prompts()

    async def read_resource(self, uri: str) -> list[ResourceContents]:
        """The contents of the resource at ``uri``.

        Raises:
            FeatureError: no resource or template matches ``uri``.
        """
        return await self._features.read_resource(uri)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> GetPromptResult:
        """The prompt ``name`` filled in with ``arguments``.

        Raises:
            FeatureError: unknown prompt, or missing/unknown arguments.
        """
        return await self._features.get_prompt(name, dict(arguments or {}))

    async def complete(
        self,
        ref: CompletionRef,
        argument: str,
        value: str,
        context: Mapping[str, str] | None = None,
    ) -> list[str]:
        """Completion suggestions for one argument of a prompt or resource template."""
        return await self._features.complete(ref, argument, value, dict(context or {}))

    async def get_service_context(self) -> str:
        """Text for an agent's system prompt ('' when the server declares none)."""
        hook = self._service_context
        if hook is None:
            return ""
        if inspect.iscoroutinefunction(hook):
            return str(await hook())
        # A sync hook may read a database: in a worker thread, as sync tools run.
        text = await anyio.to_thread.run_sync(hook, abandon_on_cancel=True)
        return str(await resolved(text))

    async def switch_context(self, session_id: str | None, thread_id: str | None) -> None:
        """Scope the following calls to ``(session_id, thread_id)``."""
        self.session_id = session_id
        self.thread_id = thread_id
        if self._switch_hook is not None:
            await resolved(self._switch_hook(session_id, thread_id))

    async def aclose(self) -> None:
        """Run the shutdown hooks (each once, in reverse order of declaration)."""
        hooks, self._shutdown_hooks = self._shutdown_hooks, []
        for hook in reversed(hooks):
            await resolved(hook())
