"""The pool's side of an LLM agent loop: the catalog searched, declared and called.

`AgentLoop` is a base of `WorkerPool` holding its tool search (`tool_index`,
`search_tools`) and its agent-loop methods (`tool_definitions`, `run_tool_call`,
`run_tool_calls`, the meta-tools ``search_tools`` / ``call_tool`` and `ToolProfile`
among them). They read the pool's catalog and call through `WorkerPool.call_tool`, and
live here so the pool core stays about running servers.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import anyio

from nativemcp.protocol import (
    ArgumentsError,
    NativeMCPResponse,
    UnknownTool,
    quoted_name,
    ui_visibility,
)

from ._catalog import Catalog
from ._config import PoolConfig
from ._handle import DEFAULT, LogHandler, ProgressCallback, _Default
from .llm._apps import with_app_note
from .llm._messages import tool_result_message, tool_results_turn
from .llm._provider import Provider, check_provider
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
    embedding_loaded,
    load_embedding,
    read_call,
    read_search,
    search_response,
)

__all__ = ["AgentLoop"]


class AgentLoop:
    """Tool search and the agent loop over a pool's catalog (a base of `WorkerPool`)."""

    _catalog: Catalog
    _config: PoolConfig
    _apps: bool
    _llm_names: dict[str, dict[str, str]]
    _tool_index: tuple[int, ToolIndex] | None

    if TYPE_CHECKING:  # WorkerPool's own

        def _check_open(self) -> None: ...

        call_tool: Callable[..., Awaitable[NativeMCPResponse[Any]]]

    def tool_index(self) -> ToolIndex:
        """The BM25 index of the catalog as it is now; `search_tools` reads it.

        It is rebuilt when a source's tools changed since the last search.

        Raises:
            ToolNameError: two sources now give the same full name (both named).
            ServerClosed: the pool is closed.
        """
        self._check_open()
        version = self._catalog.version
        if self._tool_index is None or self._tool_index[0] != version:
            index = ToolIndex(self._indexed(), embed=self._config.search_embed)
            self._tool_index = (version, index)
        return self._tool_index[1]

    async def fresh_tool_index(self) -> ToolIndex:
        """`tool_index`, rebuilt (where the catalog changed) in a worker thread.

        As the embedding model is loaded: the event loop serves other requests
        meanwhile (`search_tools` and serve's meta-tools read it so).

        Raises:
            ToolNameError: two sources now give the same full name (both named).
            ServerClosed: the pool is closed.
        """
        self._check_open()
        version = self._catalog.version
        if self._tool_index is not None and self._tool_index[0] == version:
            return self._tool_index[1]
        embed = self._config.search_embed
        if embed and not embedding_loaded():
            # The first load reads the model's 16 MB (about 0.7 s here).
            await anyio.to_thread.run_sync(load_embedding)
        tools = self._indexed()  # read here: the catalog belongs to the event loop
        index = await anyio.to_thread.run_sync(functools.partial(ToolIndex, tools, embed=embed))
        if self._catalog.version == version:  # else a newer one is built on the next read
            self._tool_index = (version, index)
        return index

    def _indexed(self) -> list[IndexedTool]:
        # A tool only its app may call (MCP Apps) is not found for the model either.
        entries = [e for e in self._catalog.entries() if "model" in ui_visibility(e.tool.meta)]
        return [IndexedTool(e.full_name, e.service.server_name, e.tool) for e in entries]

    async def search_tools(
        self, query: str, limit: int = 5, *, profile: ToolProfile | None = None
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
        tools it offers.

        Raises:
            ValueError: ``limit`` is not between 1 and 50.
            ServerClosed: the pool is closed.
        """
        where = profile.allows if profile is not None and profile.filters else None
        return (await self.fresh_tool_index()).search(query, limit, where=where)

    # -- the agent loop --------------------------------------------------------------

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

        Raises:
            UnknownProviderError: not one of the four providers.
            ValueError: ``defer_loading`` for another provider than Anthropic, or with
                ``search``.
            ServerClosed: the pool is closed.
        """
        provider = check_provider(provider)
        self._check_open()
        search = search or (profile is not None and profile.search)
        if defer_loading and (provider != "anthropic" or search):
            raise ValueError(
                "defer_loading is Anthropic's tool search (provider='anthropic'), and "
                "replaces search=True; for another provider use search=True"
            )
        if search:
            return [declaration(tool, tool.name, provider) for tool in META_TOOLS]
        names = self._names_for(provider)
        by_full = {full: short for short, full in names.items()}
        # A tool only its app may call (MCP Apps visibility ["app"]) is not the model's.
        definitions = [
            declaration(entry.tool, by_full[entry.full_name], provider)
            for entry in self._catalog.entries()
            if "model" in ui_visibility(entry.tool.meta)
            and (profile is None or profile.allows(entry.full_name))
        ]
        return deferred_for_anthropic(definitions) if defer_loading else definitions

    async def run_tool_call(
        self,
        call: Any,
        *,
        provider: Provider,
        timeout: float | _Default | None = DEFAULT,
        on_progress: ProgressCallback | None = None,
        on_log: LogHandler | None = None,
        profile: ToolProfile | None = None,
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
        and a call of another is an unknown tool to the model.

        Raises:
            UnknownProviderError: not one of the four providers.
            ValueError: ``call`` is not a tool call at all (no tool name).
        """
        provider = check_provider(provider)
        parsed = read_tool_call(call, provider)
        full_name = self._names_for(provider).get(parsed.name, parsed.name)
        outcome: NativeMCPResponse[Any] | Exception
        arguments = parsed.arguments
        if parsed.error is not None:
            outcome = ArgumentsError(f"tool call {quoted_name(parsed.name)}: {parsed.error}")
        else:
            try:
                # No full name is a meta-tool's: a full name always holds "__".
                if full_name == SEARCH_TOOLS:
                    query, limit = read_search(arguments)
                    found = await self.search_tools(query, limit, profile=profile)
                    outcome = search_response(query, found, self._offered(profile))
                else:
                    if full_name == CALL_TOOL:
                        full_name, arguments = read_call(arguments)
                    if profile is not None and not profile.allows(full_name):
                        raise UnknownTool(
                            f"no tool named {quoted_name(full_name)} is offered here; call "
                            f"{SEARCH_TOOLS} to find one"
                        )
                    outcome = await self.call_tool(
                        full_name,
                        arguments,
                        timeout=timeout,
                        on_progress=on_progress,
                        on_log=on_log,
                    )
                    if self._apps:  # the app shows the tool's app: the model hears so
                        outcome = with_app_note(outcome, self._catalog.entry(full_name).tool)
            except Exception as exc:  # the model reads the error; cancellation is not caught
                outcome = exc
        return tool_result_message(
            outcome, provider=provider, call_id=parsed.call_id, tool_name=parsed.name
        )

    def _offered(self, profile: ToolProfile | None) -> int:
        """How many tools of the catalog ``profile`` offers (all without one)."""
        if profile is None or not profile.filters:
            return len(self.tool_index())
        return sum(
            1
            for entry in self._catalog.entries()
            if "model" in ui_visibility(entry.tool.meta) and profile.allows(entry.full_name)
        )

    async def run_tool_calls(
        self,
        calls: Iterable[Any],
        *,
        provider: Provider,
        timeout: float | _Default | None = DEFAULT,
        on_progress: ProgressCallback | None = None,
        on_log: LogHandler | None = None,
        profile: ToolProfile | None = None,
    ) -> list[dict[str, Any]]:
        """Run one model turn's tool calls, in order; the history entries that answer them.

        Append the entries to the conversation as they are.

        Each call runs as `run_tool_call` runs it (``profile`` too). OpenAI and
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
            )
            for call in calls
        ]
        return tool_results_turn(results, provider=provider)
