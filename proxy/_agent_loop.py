"""The pool's side of an LLM agent loop: the catalog searched, declared and called.

`AgentLoop` is a part `WorkerPool` holds (``AgentLoop(pool, result_budget=…)``): its
tool search (`tool_index`, `search_tools`), its agent-loop methods (`tool_definitions`,
`run_tool_call`, `run_tool_calls`, the meta-tools ``search_tools`` / ``call_tool`` and
`ToolProfile` among them) and code mode's entry points (`run_code`, `describe_tools`,
the room ``codemode/``). It reads the pool through `LoopPool` (the catalog, the config,
the content store's proxy) and calls through `WorkerPool.call_tool`, so the pool core
stays about running servers; the pool's methods of the same names hand over to it.
Which tools the model may see is decided once, in `_model_entries`.

Each result is held to the loop's ``result_budget`` (`DEFAULT_RESULT_BUDGET` tokens
unless ``AgentLoop(result_budget=…)`` or ``WorkerPool(result_budget=…)`` says
otherwise; None turns it off): one over it is cut at a readable boundary and kept whole
by its `ResultKeeping`, and the model reads the rest with the ``read_result`` tool,
which `tool_definitions` then declares and `run_tool_call` answers.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Protocol

import msgspec

from nativemcp.protocol import (
    ArgumentsError,
    CodeError,
    NativeMCPResponse,
    Tool,
    UnknownTool,
    quoted_name,
    text_response,
    ui_visibility,
)

from ._catalog import Catalog, CatalogEntry
from ._config import PoolConfig
from ._handle import DEFAULT, CallOptions, LogHandler, ProgressCallback, ServerHandle, _Default
from ._kept_results import ResultKeeping
from ._loop_index import LoopIndex
from .codemode import (
    CODE_META_TOOLS,
    DESCRIBE_TOOLS,
    RUN_CODE,
    CodeLimits,
    CodeResult,
    CodeSandbox,
    chosen_tools,
    code_response,
    code_search_response,
    code_tools,
    named_handlers,
    read_code,
    read_describe,
    tool_stubs,
)
from .llm import DEFAULT_RESULT_BUDGET
from .llm._apps import with_app_note
from .llm._messages import message_for, tool_results_turn
from .llm._provider import Provider, check_provider
from .llm._read_result import READ_RESULT, READ_RESULT_TOOL
from .llm._render import render
from .llm._tools import declaration, provider_name, read_tool_call
from .tool_search import (
    CALL_TOOL,
    META_TOOLS,
    SEARCH_TOOLS,
    IndexedTool,
    ToolIndex,
    ToolMatch,
    ToolProfile,
    deferred_for_anthropic,
    read_call,
    read_search,
    search_response,
)

__all__ = ["AgentLoop", "LoopPool"]


class LoopPool(Protocol):
    """What an `AgentLoop` reads of its pool (`WorkerPool` is one)."""

    @property
    def catalog(self) -> Catalog:
        """The pool's catalog; raises `ServerClosed` once the pool is closed."""
        ...

    @property
    def config(self) -> PoolConfig: ...

    @property
    def handles(self) -> Mapping[str, ServerHandle]: ...

    def server(self, interface: Any, /) -> Any: ...

    async def call_tool(
        self,
        full_name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        timeout: float | _Default | None = DEFAULT,
        on_progress: ProgressCallback | None = None,
        on_log: LogHandler | None = None,
        options: CallOptions | None = None,
    ) -> NativeMCPResponse[Any]: ...


class AgentLoop:
    """Tool search and the agent loop over a pool's catalog.

    ``pool``: whose catalog it reads and through whose `call_tool` it calls (its
    config gives ``search_embed`` and ``code_limits``). ``result_budget``: the tokens
    one tool result may take in `run_tool_call`'s messages (None: no limit).
    ``apps``: the pool shows MCP Apps, so the model hears when a tool's app is shown.
    `WorkerPool` builds one with its own ``result_budget`` and ``apps``; close it with
    `aclose` (code mode's sandbox processes).
    """

    def __init__(
        self,
        pool: LoopPool,
        *,
        result_budget: int | None = DEFAULT_RESULT_BUDGET,
        apps: bool = False,
    ) -> None:
        self._pool = pool
        self._catalog = pool.catalog
        self._apps = apps
        self._llm_names: dict[str, dict[str, str]] = {}
        self._index = LoopIndex(pool.catalog, pool.config, self._indexed)
        self._results = ResultKeeping(result_budget, self._kept_store)
        self._code_sandbox = CodeSandbox()  # its processes start with the first run
        self._code_names: tuple[int, dict[str, Tool]] | None = None

    def _check_open(self) -> None:
        self._pool.catalog  # noqa: B018  (raises ServerClosed once the pool is closed)

    async def aclose(self) -> None:
        """Stop code mode's sandbox processes and close the learned queries' database."""
        self._index.close()
        await self._code_sandbox.aclose()

    def tool_index(self) -> ToolIndex:
        """The BM25 index of the catalog as it is now; `search_tools` reads it.

        It is rebuilt when a source's tools changed since the last search (or, with
        ``search_learn``, the words users found tools by).

        Raises:
            ToolNameError: two sources now give the same full name (both named).
            ServerClosed: the pool is closed.
        """
        self._check_open()
        return self._index.now()

    async def fresh_tool_index(self) -> ToolIndex:
        """`tool_index`, rebuilt (where the catalog changed) in a worker thread.

        As the embedding model is loaded: the event loop serves other requests
        meanwhile (`search_tools` and serve's meta-tools read it so).

        Raises:
            ToolNameError: two sources now give the same full name (both named).
            ServerClosed: the pool is closed.
        """
        self._check_open()
        return await self._index.fresh()

    def searched(self, session: Hashable, query: str) -> None:
        """Note that ``session`` (a conversation, a client) searched for ``query``.

        With ``search_learn`` its next call keeps the query (see `learn_call`)."""
        self._index.searched(session, query)

    async def learn_call(self, session: Hashable, full_name: str) -> bool:
        """Keep ``session``'s last search as words of ``full_name``, which it calls now.

        With ``search_learn``, the next search worded so finds that tool. False where
        nothing was kept (learning off, no recent search, an unfit query, a write that
        failed: logged)."""
        return await self._index.learn_call(session, full_name)

    def _indexed(self) -> list[IndexedTool]:
        # A tool only its app may call (MCP Apps) is not found for the model either.
        entries = self._model_entries(None)
        return [IndexedTool(e.full_name, e.service.server_name, e.tool) for e in entries]

    async def search_tools(
        self,
        query: str,
        limit: int = 5,
        *,
        profile: ToolProfile | None = None,
        allowed: Callable[[str], bool] | None = None,
    ) -> list[ToolMatch]:
        """The ``limit`` tools of the catalog that best fit ``query``, best first.

        Every tool of every source is ranked by BM25 over its full name, its server's
        name, its title and description and its parameters' names and descriptions,
        tokenized as the content store tokenizes text (any language; Chinese, Japanese
        and Korean as character bigrams). Each `ToolMatch` has the full name to call,
        the score, one line of description and the input schema. A tool that holds no
        word of the query is not returned, unless the pool was made with
        ``search_embed=True``: then BM25's ranking is fused with a small embedding
        model's (reciprocal rank), which finds tools by meaning too, and a search finds
        ``limit`` tools whenever the catalog holds as many. ``profile`` keeps only the
        tools it offers, ``allowed`` (serve's caller check) only those it allows.

        Raises:
            ValueError: ``limit`` is not between 1 and 50.
            ServerClosed: the pool is closed.
        """
        offered = profile.allows if profile is not None and profile.filters else None
        where: Callable[[str], bool] | None = offered
        if allowed is not None:
            where = allowed if offered is None else lambda name: offered(name) and allowed(name)
        return (await self.fresh_tool_index()).search(query, limit, where=where)

    def _model_entries(
        self, profile: ToolProfile | None, allowed: Callable[[str], bool] | None = None
    ) -> list[CatalogEntry]:
        """The catalog's tools the model may see: not only an app's (MCP Apps visibility
        ``["app"]``), offered by ``profile``, and ``allowed`` (serve's caller check)."""
        return [
            entry
            for entry in self._catalog.entries()
            if "model" in ui_visibility(entry.tool.meta)
            and (profile is None or profile.allows(entry.full_name))
            and (allowed is None or allowed(entry.full_name))
        ]

    # -- the agent loop --------------------------------------------------------------

    @property
    def result_budget(self) -> int | None:
        """The tokens one tool result may take in `run_tool_call`'s messages.

        None: no limit. Set with ``AgentLoop(result_budget=…)``, as
        ``WorkerPool(result_budget=…)`` passes it."""
        return self._results.budget

    def _kept_store(self) -> Any:
        """The content store's typed proxy, where cut results are kept; None without it."""
        if "content-store" not in self._pool.handles:
            return None
        from nativemcp.workers.content_store import ContentStoreAPI

        return self._pool.server(ContentStoreAPI)

    def _names_for(self, provider: Provider) -> dict[str, str]:
        """Provider name → full name for every catalog tool (stable across calls)."""
        names = self._llm_names.setdefault(provider, {})
        given = {full: short for short, full in names.items()}
        for entry in self._catalog.entries():
            if entry.full_name not in given:
                short = provider_name(entry.full_name, provider, names)
                names[short] = entry.full_name
                given[entry.full_name] = short
        return names

    async def tool_definitions(
        self,
        provider: Provider,
        *,
        search: bool = False,
        defer_loading: bool = False,
        profile: ToolProfile | None = None,
        code_mode: bool = False,
    ) -> list[dict[str, Any]]:
        """Every tool of the catalog as ``provider``'s tool declarations.

        ``"openai"`` (Chat Completions tools), ``"openai-responses"`` (Responses function
        tools), ``"anthropic"`` (Messages tools) or ``"gemini"`` (FunctionDeclarations;
        wrap them as ``types.Tool(function_declarations=...)``). Names that break a
        provider's rule are shortened reversibly: `run_tool_call` maps them back.
        ``search=True``: only the two meta-tools, ``search_tools(query, limit?)`` and
        ``call_tool(name, arguments)``, which `run_tool_call` runs over the whole
        catalog (a few hundred tokens instead of every definition).
        ``defer_loading=True`` (Anthropic only): every definition marked
        ``defer_loading``, after Anthropic's own tool search tool
        (``tool_search_tool_bm25``), which finds them on Anthropic's side.
        ``code_mode=True``: the three meta-tools of code mode, ``search_tools(query,
        limit?)``, ``describe_tools(names)`` and ``run_code(code)`` (pass
        ``code_mode=True`` to `run_tool_call` too): the model finds tools, reads them as
        Python stubs and writes a program over them (`run_code`).

        Raises:
            UnknownProviderError: not one of the four providers.
            ValueError: ``defer_loading`` for another provider than Anthropic, or with
                ``search`` or ``code_mode``.
            ServerClosed: the pool is closed.
        """
        provider = check_provider(provider)
        self._check_open()
        # With a result budget the model reads what a cut left out with read_result (a
        # program's printed output is a result like any other).
        reader = [READ_RESULT_TOOL] if self._results.budget is not None else []
        code_mode = code_mode or (profile is not None and profile.code_mode)
        if code_mode:
            if defer_loading:
                raise ValueError("defer_loading and code_mode are two ways; pick one")
            return [declaration(tool, tool.name, provider) for tool in (*CODE_META_TOOLS, *reader)]
        search = search or (profile is not None and profile.search)
        if defer_loading and (provider != "anthropic" or search):
            raise ValueError(
                "defer_loading is Anthropic's tool search (provider='anthropic'), and "
                "replaces search=True; for another provider use search=True"
            )
        if search:
            return [declaration(tool, tool.name, provider) for tool in (*META_TOOLS, *reader)]
        names = self._names_for(provider)
        by_full = {full: short for short, full in names.items()}
        definitions = [
            declaration(entry.tool, by_full[entry.full_name], provider)
            for entry in self._model_entries(profile)
        ]
        definitions = deferred_for_anthropic(definitions) if defer_loading else definitions
        return [*definitions, *(declaration(tool, tool.name, provider) for tool in reader)]

    async def run_tool_call(
        self,
        call: Any,
        *,
        provider: Provider,
        timeout: float | _Default | None = DEFAULT,
        on_progress: ProgressCallback | None = None,
        on_log: LogHandler | None = None,
        profile: ToolProfile | None = None,
        result_owner: str = "",
        code_mode: bool = False,
    ) -> dict[str, Any]:
        """Run a model's tool call and return the provider's tool-result message.

        ``call`` is what the provider's SDK gives (an object or its dict): an OpenAI
        ``tool_calls[i]``, a Responses ``function_call`` item, an Anthropic ``tool_use``
        block, a Gemini ``function_call`` Part. Arguments that are not JSON, an unknown
        tool, a tool error or a failed source become an error message the model can
        read (see `tool_result_message`); cancellation propagates. The meta-tools of
        ``tool_definitions(provider, search=True)`` run here too: ``search_tools``
        answers the matches, ``call_tool`` calls the tool it names. ``profile`` (the
        one given to `tool_definitions`): the search finds only the tools it offers,
        and a call of another is an unknown tool to the model. ``code_mode=True``: the
        meta-tools of ``tool_definitions(provider, code_mode=True)`` run here, a
        program's output (or the error that stopped it) is the result.

        A result over the pool's `result_budget` is cut at a readable boundary (see
        `tool_result_message`'s ``budget``) and kept whole for ``result_owner`` (one
        per conversation or user: a ``read_result`` call reads only the results kept
        for the same owner), in the content store when the pool runs it, else in
        memory; ``read_result`` calls are answered here.

        Raises:
            UnknownProviderError: not one of the four providers.
            ValueError: ``call`` is not a tool call at all (no tool name).
        """
        provider = check_provider(provider)
        parsed = read_tool_call(call, provider)
        full_name = self._names_for(provider).get(parsed.name, parsed.name)
        outcome: NativeMCPResponse[Any] | Exception
        arguments = parsed.arguments
        reading = False  # a read_result answer fits already: never cut or kept again
        if parsed.error is not None:
            outcome = ArgumentsError(f"tool call {quoted_name(parsed.name)}: {parsed.error}")
        else:
            try:
                # No full name is a meta-tool's: a full name always holds "__".
                code_mode = code_mode or (profile is not None and profile.code_mode)
                if code_mode and full_name in (SEARCH_TOOLS, DESCRIBE_TOOLS, RUN_CODE):
                    options = CallOptions(timeout=timeout, on_progress=on_progress, on_log=on_log)
                    outcome = await self.answer_code_tool(
                        full_name, arguments, profile=profile, options=options
                    )
                elif full_name == SEARCH_TOOLS:
                    query, limit = read_search(arguments)
                    self.searched(result_owner, query)
                    found = await self.search_tools(query, limit, profile=profile)
                    outcome = search_response(query, found, self._offered(profile))
                elif full_name == READ_RESULT and self._results.budget is not None:
                    reading = True
                    outcome = await self._results.read(arguments, owner=result_owner)
                else:
                    options = CallOptions(timeout=timeout, on_progress=on_progress, on_log=on_log)
                    full_name, outcome = await self._model_call(
                        full_name, arguments, profile, options, result_owner
                    )
            except Exception as exc:  # the model reads the error; cancellation is not caught
                outcome = exc
        output = render(outcome)
        if not reading:
            output = await self._results.fit(output, owner=result_owner, tool=full_name)
        return message_for(output, provider, parsed.call_id, parsed.name)

    async def _model_call(
        self,
        full_name: str,
        arguments: Mapping[str, Any] | None,
        profile: ToolProfile | None,
        options: CallOptions,
        session: str,
    ) -> tuple[str, NativeMCPResponse[Any]]:
        """A catalog tool the model called by its name or through ``call_tool``: the
        full name called, and the answer (with the app's note where one shows it)."""
        if full_name == CALL_TOOL:
            full_name, arguments = read_call(arguments)
        if profile is not None and not profile.allows(full_name):
            raise UnknownTool(
                f"no tool named {quoted_name(full_name)} is offered here; call "
                f"{SEARCH_TOOLS} to find one"
            )
        outcome = await self._pool.call_tool(full_name, arguments, options=options)
        if not outcome.is_error:  # a tool found and run: its query is worth keeping
            await self.learn_call(session, full_name)
        if self._apps:  # the app shows the tool's app: the model hears so
            outcome = with_app_note(outcome, self._catalog.entry(full_name).tool)
        return full_name, outcome

    async def answer_code_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        profile: ToolProfile | None = None,
        allowed: Callable[[str], bool] | None = None,
        options: CallOptions | None = None,
    ) -> NativeMCPResponse[Any]:
        """The answer of one of code mode's meta-tools, as the model reads it.

        ``name`` is ``search_tools``, ``describe_tools`` or ``run_code``, over the tools
        ``profile`` and ``allowed`` leave the model: the search by identifiers, the
        stubs, or what the program printed (its error, as an ``isError`` result the
        model reads). ``options``: each inner call's (``serve --code-mode`` passes the
        caller's).

        Raises:
            ArgumentsError: arguments the meta-tool cannot read.
            UnknownTool: ``describe_tools`` names a tool the caller may not see.
            ValueError: ``name`` is none of the three.
        """
        if name == SEARCH_TOOLS:
            query, limit = read_search(arguments)
            found = await self.search_tools(query, limit, profile=profile, allowed=allowed)
            identifiers = {tool.name: key for key, tool in self._code_tools(None).items()}
            offered = len(self._model_entries(profile, allowed))
            return code_search_response(query, found, offered, identifiers)
        if name == DESCRIBE_TOOLS:
            chosen = read_describe(arguments)
            stubs = await self.describe_tools(
                chosen, profile=profile, allowed=allowed, header=False
            )
            return text_response(stubs)
        if name != RUN_CODE:
            raise ValueError(f"{quoted_name(name)} is not a code-mode meta-tool")
        code = read_code(arguments)
        try:
            result = await self.run_code(code, profile=profile, allowed=allowed, options=options)
        except CodeError as exc:
            return code_response(exc)
        return code_response(result)

    def _offered(self, profile: ToolProfile | None) -> int:
        """How many tools of the catalog ``profile`` offers (all without one)."""
        if profile is None or not profile.filters:
            return len(self.tool_index())
        return len(self._model_entries(profile))

    async def run_tool_calls(
        self,
        calls: Iterable[Any],
        *,
        provider: Provider,
        timeout: float | _Default | None = DEFAULT,
        on_progress: ProgressCallback | None = None,
        on_log: LogHandler | None = None,
        profile: ToolProfile | None = None,
        result_owner: str = "",
        code_mode: bool = False,
    ) -> list[dict[str, Any]]:
        """Run one model turn's tool calls, in order; the history entries that answer them.

        Append the entries to the conversation as they are.

        Each call runs as `run_tool_call` runs it (``profile``, ``result_owner`` and
        ``code_mode`` too). OpenAI and
        Responses get one entry per call; Anthropic one user message holding every
        ``tool_result`` block, and Gemini one user content holding every
        ``functionResponse`` Part, as their APIs require (see `tool_results_turn`).

        Raises:
            UnknownProviderError: not one of the four providers.
            ValueError: an item of ``calls`` is not a tool call at all (no tool name).
        """
        provider = check_provider(provider)
        results = [
            await self.run_tool_call(
                call,
                provider=provider,
                timeout=timeout,
                on_progress=on_progress,
                on_log=on_log,
                profile=profile,
                result_owner=result_owner,
                code_mode=code_mode,
            )
            for call in calls
        ]
        return tool_results_turn(results, provider=provider)

    # -- code mode -------------------------------------------------------------------

    def _code_tools(
        self, profile: ToolProfile | None, allowed: Callable[[str], bool] | None = None
    ) -> dict[str, Tool]:
        """Identifier → tool (under its full name) for each tool the model may see."""
        version = self._catalog.version
        if self._code_names is None or self._code_names[0] != version:
            visible = [(e.full_name, e.tool) for e in self._model_entries(None)]
            self._code_names = (version, code_tools(visible))
        if profile is None and allowed is None:
            return self._code_names[1]
        offered = {e.full_name for e in self._model_entries(profile, allowed)}
        return {n: t for n, t in self._code_names[1].items() if t.name in offered}

    async def describe_tools(
        self,
        names: Iterable[str],
        *,
        profile: ToolProfile | None = None,
        allowed: Callable[[str], bool] | None = None,
        header: bool = True,
    ) -> str:
        """The named tools as the Python stubs a program calls them by.

        ``names`` are full names or the identifiers `run_code` gives the tools (as
        `search_tools` finds them). Each stub is one ``async def`` with typed keyword
        parameters, its return type (or what comes back when the tool has no output
        schema) and its description's first sentence; a return type several share is
        written once. ``header``: a first line on how to call them (the ``run_code``
        meta-tool's description carries it, so the meta-tool leaves it out).

        Raises:
            UnknownTool: a name the caller may not see (the message names it).
            ServerClosed: the pool is closed.
        """
        self._check_open()
        chosen = chosen_tools(self._code_tools(profile, allowed), names)
        return tool_stubs(chosen, header=header)

    async def run_code(
        self,
        code: str,
        *,
        inputs: Mapping[str, Any] | None = None,
        limits: CodeLimits | None = None,
        profile: ToolProfile | None = None,
        allowed: Callable[[str], bool] | None = None,
        options: CallOptions | None = None,
    ) -> CodeResult:
        """Run a model's Python program with the catalog's tools callable; what it printed.

        The program runs in a pydantic-monty sandbox (no files, network, environment
        or subprocesses) and calls every tool the model may see (``profile`` and
        ``allowed`` narrow them) by its identifier, ``await tool(key=value)``, as
        `describe_tools` shows it. A call goes through `call_tool` (``options``: time
        limit, the caller, its handlers) and gives the unwrapped value as plain data; a
        tool error raises ``RuntimeError`` with the tool's text, which the program may
        catch. ``inputs`` are globals the program starts with; ``limits``: the run's
        (default: the pool's ``code_limits``).

        Returns:
            What it printed, its last expression's value, and each inner call.

        Raises:
            CodeError: the program raised; `CodeSyntaxError` (line, column),
                `CodeLimitExceeded` (``limit`` names which of ``limits``) and
                `SandboxCrashed` are its kinds; ``error.result`` holds what ran.
            ImportError: the ``code`` extra (pydantic-monty) is not installed.
            ServerClosed: the pool is closed.
        """
        self._check_open()
        tools = self._code_tools(profile, allowed)
        clash = sorted(set(inputs or ()) & set(tools))
        if clash:
            raise ValueError(f"inputs named like tools: {', '.join(clash)}")

        names = {tool.name: name for name, tool in tools.items()}

        async def call(full_name: str, arguments: dict[str, Any]) -> NativeMCPResponse[Any]:
            each = options  # its progress and log messages say whose they are
            if options is not None and (named := named_handlers(names[full_name], options)):
                each = msgspec.structs.replace(options, **named)
            return await self._pool.call_tool(full_name, arguments, options=each)

        limits = limits or self._pool.config.code_limits
        return await self._code_sandbox.run(
            code, tools=tools, call=call, inputs=inputs, limits=limits
        )
