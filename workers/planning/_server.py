"""The planning server: a goal, todos and observations per (session, thread) scope.

Every tool answers with the whole plan twice: as text the model reads (what changed,
the plan, the next step) and as the typed `PlanningState` code reads. Mistakes the
model can fix (an empty goal, an unknown todo id) are ``isError`` results that say how.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Final

import msgspec

from nativemcp.protocol import (
    NativeMCPResponse,
    ToolAnnotations,
    ToolError,
    structured_response,
    to_structured_content,
)
from nativemcp.workers import Context, Server, ServerConfig

from ._models import DEFAULT_SCOPE, MAX_OBSERVATIONS, MAX_TEXT_CHARS, PlanningState
from ._render import quote, render_service_context, render_state, todo_line
from ._storage import PlanningStorage, open_storage
from ._store import Scope, UnknownTodoIds

__all__ = ["SERVER_NAME", "create_server"]

SERVER_NAME: Final = "planning"
"""The built-in server's name (``pool.server("planning")``)."""

Response = NativeMCPResponse[PlanningState]

_TodoId = Annotated[int, msgspec.Meta(description="A todo's id, as shown after 'ID:'.")]


def _scope_of(session_id: str | None, thread_id: str | None) -> Scope:
    return (session_id or DEFAULT_SCOPE, thread_id or DEFAULT_SCOPE)


def _checked_text(value: str, argument: str, limit: int) -> str:
    """``value`` without surrounding whitespace, or a ToolError saying what is wrong."""
    text = value.strip()
    if not text:
        raise ToolError(
            f"Error: {argument} must not be empty.",
            structured_content={"error": "empty_argument", "argument": argument},
        )
    if len(text) > limit:
        raise ToolError(
            f"Error: {argument} is {len(text):,} characters long; the limit is {limit:,}. "
            f"Shorten it (keep details in a document, not in the plan).",
            structured_content={
                "error": "argument_too_long",
                "argument": argument,
                "length": len(text),
                "limit": limit,
            },
        )
    return text


def _unknown_ids_error(exc: UnknownTodoIds) -> ToolError:
    state = exc.state
    plural = "s" if len(exc.unknown) > 1 else ""
    wrong = ", ".join(str(todo_id) for todo_id in exc.unknown)
    if state.todos:
        valid = "\n".join(todo_line(todo, "  ") for todo in state.todos)
        hint = f"Valid todo ids: {', '.join(str(todo.id) for todo in state.todos)}\n{valid}"
    else:
        hint = "There are no todos in this plan; add one with add_todo."
    return ToolError(
        f"Error: unknown todo id{plural} {wrong}. Nothing was changed.\n{hint}",
        structured_content={
            "error": "unknown_todo_id",
            "unknownIds": exc.unknown,
            "validIds": [todo.id for todo in state.todos],
            "state": to_structured_content(state),
        },
    )


def _call_scope(ctx: Context) -> Scope:
    # The call's own scope: serve gives each MCP session (under OAuth, each user) its
    # own; a call without one runs in the server's current scope (`switch_context`).
    return _scope_of(ctx.session_id, ctx.thread_id)


class _Planning:
    """The tools of one planning server, on its storage; each works in its call's scope.

    Each public method is a tool (its docstring is the tool's description);
    `create_server` lists them in the order ``tools/list`` shows them.
    """

    def __init__(self, store: PlanningStorage, limit: int, scope: Scope) -> None:
        self.store = store
        self.limit = limit
        self.scope = scope

    def switch(self, session_id: str | None, thread_id: str | None) -> None:
        self.scope = _scope_of(session_id, thread_id)

    def service_context(self) -> str:
        return render_service_context(self.store.state(self.scope))

    # -- the goal --------------------------------------------------------------------

    def create_goal(
        self,
        ctx: Context,
        goal: Annotated[str, msgspec.Meta(description="What the plan should achieve.")],
    ) -> Response:
        """Set the plan's goal (replacing any current goal, which is remembered as the
        previous goal): the objective or aim the work is for. Answers with the next step."""
        text = _checked_text(goal, "goal", self.limit)
        state, previous = self.store.set_goal(_call_scope(ctx), text)
        # Headlines say what changed without repeating what the plan below states.
        if previous == text:
            headline = "Goal unchanged (already set)."
        elif previous is not None:
            headline = "Goal created; it replaces the Previous Goal."
        else:
            headline = "Goal created."
        return structured_response(render_state(state, headline), state)

    def clear_goal(self, ctx: Context) -> Response:
        """Clear the current goal (it is remembered as the previous goal); todos and
        observations stay. Drop or abandon the objective without starting over."""
        state, cleared = self.store.clear_goal(_call_scope(ctx))
        if cleared is None:
            headline = "No active goal to clear; nothing changed."
        else:
            headline = "Goal cleared; it is kept as the Previous Goal."
        return structured_response(render_state(state, headline), state)

    # -- todos -----------------------------------------------------------------------

    def add_todo(
        self,
        ctx: Context,
        name: Annotated[str, msgspec.Meta(description="The step to do, as one short sentence.")],
    ) -> Response:
        """Add a pending todo (a step towards the goal): a task or item on the to-do
        list or checklist. Answers with the new todo's id."""
        text = _checked_text(name, "name", self.limit)
        state, todo = self.store.add_todo(_call_scope(ctx), text)
        return structured_response(render_state(state, f"Todo ID:{todo.id} added."), state)

    def mark_todo(
        self,
        ctx: Context,
        id: _TodoId,
        completed: Annotated[
            bool, msgspec.Meta(description="true: done (the default); false: pending again.")
        ] = True,
    ) -> Response:
        """Mark a todo as completed (or, with completed=false, as pending again): tick a
        task off as done, or reopen it. Answers with the next step."""
        try:
            state, _, changed = self.store.mark_todo(_call_scope(ctx), id, completed)
        except UnknownTodoIds as exc:
            raise _unknown_ids_error(exc) from None
        status = "completed" if completed else "pending"
        verb = "marked" if changed else "was already"
        headline = f"Todo ID:{id} {verb} {status}."
        return structured_response(render_state(state, headline), state)

    def clear_todos(
        self,
        ctx: Context,
        ids: Annotated[
            list[int] | None,
            msgspec.Meta(description="The todo ids to remove; omit to remove every todo."),
        ] = None,
    ) -> Response:
        """Remove the given todos, or every todo when no ids are given. Unknown ids are
        an error and nothing is removed. Delete items from the to-do list."""
        if ids is not None and not ids:
            raise ToolError(
                "Error: ids is an empty list. Omit ids to remove every todo, "
                "or list the ids to remove.",
                structured_content={"error": "empty_argument", "argument": "ids"},
            )
        try:
            state, removed = self.store.clear_todos(_call_scope(ctx), ids)
        except UnknownTodoIds as exc:
            raise _unknown_ids_error(exc) from None
        if not removed:
            headline = "No todos to clear; nothing changed."
        else:
            listed = "\n".join(todo_line(todo, "  ") for todo in removed)
            headline = f"Cleared {len(removed)} todo{'s' if len(removed) != 1 else ''}:\n{listed}"
        return structured_response(render_state(state, headline), state)

    # -- observations and the whole plan ---------------------------------------------

    def add_observation(
        self,
        ctx: Context,
        observation: Annotated[
            str, msgspec.Meta(description="What was learned or done, in a sentence or two.")
        ],
    ) -> Response:
        """Record an observation (a finding, a result, a decision): write down a note of
        what was learned or done, to remember it. Only the newest 10 are kept."""
        text = _checked_text(observation, "observation", self.limit)
        state, dropped = self.store.add_observation(_call_scope(ctx), text)
        headline = "Observation added."
        if dropped:
            headline += (
                f"\nOnly the newest {MAX_OBSERVATIONS} observations are kept; dropped the oldest: "
                + "; ".join(quote(old) for old in dropped)
            )
        return structured_response(render_state(state, headline), state)

    def clear_session(self, ctx: Context) -> Response:
        """Reset this session's plan: goal, previous goal, todos and observations.
        Start over from nothing, wiping everything planned so far."""
        before, state = self.store.clear_session(_call_scope(ctx))
        removed = []
        if before.goal is not None:
            removed.append("the goal")
        if before.todos:
            removed.append(f"{len(before.todos)} todo{'s' if len(before.todos) != 1 else ''}")
        if before.observations:
            count = len(before.observations)
            removed.append(f"{count} observation{'s' if count != 1 else ''}")
        headline = (
            f"Session cleared: removed {', '.join(removed)}."
            if removed
            else "Session cleared (it was already empty)."
        )
        return structured_response(render_state(state, headline), state)

    def get_current_state(self, ctx: Context) -> Response:
        """The whole plan: goal, todos with ids and marks, observations, next step.

        Where things stand: the progress so far and what is left to do.
        """
        state = self.store.state(_call_scope(ctx))
        return structured_response(render_state(state, "The current plan:"), state)


_IDEMPOTENT: Final = ToolAnnotations(idempotent_hint=True)
_RESETS: Final = ToolAnnotations(destructive_hint=True, idempotent_hint=True)
_REMOVES: Final = ToolAnnotations(destructive_hint=True)
_READ_ONLY: Final = ToolAnnotations(read_only_hint=True)


def create_server(config: ServerConfig) -> Server:
    """The planning server; its state lives in ``config.data_dir / "planning"``.

    Without a ``data_dir`` the state is kept in memory (lost when the server stops);
    with ``config.database_url`` it lives in that PostgreSQL database instead.
    Option ``max_text_chars`` (default `MAX_TEXT_CHARS`) bounds a goal, todo name or
    observation.

    Raises:
        ValueError: ``max_text_chars`` is not a positive integer.
    """
    limit: Any = config.options.get("max_text_chars", MAX_TEXT_CHARS)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"planning option max_text_chars must be a positive int, not {limit!r}")

    server = Server(
        SERVER_NAME,
        description="A goal, todos and observations for the current session and thread.",
    )
    data_dir: Path | None = None
    if config.data_dir is not None:
        data_dir = config.data_dir / SERVER_NAME
        server.data_dir = data_dir
    store = open_storage(data_dir, config.database_url)
    planning = _Planning(store, limit, _scope_of(server.session_id, server.thread_id))
    server.on_switch_context(planning.switch)
    server.on_shutdown(store.close)
    server.service_context(planning.service_context)

    # The tools, in the order tools/list shows them.
    server.tool(annotations=_IDEMPOTENT)(planning.create_goal)
    server.tool(annotations=_RESETS)(planning.clear_goal)
    server.tool(planning.add_todo)
    server.tool(annotations=_IDEMPOTENT)(planning.mark_todo)
    server.tool(annotations=_REMOVES)(planning.clear_todos)
    server.tool(planning.add_observation)
    server.tool(annotations=_RESETS)(planning.clear_session)
    server.tool(annotations=_READ_ONLY)(planning.get_current_state)
    return server
