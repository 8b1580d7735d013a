"""The text a model reads: what just changed, the whole plan, and what to do next."""

from __future__ import annotations

from ._models import MAX_OBSERVATIONS, PlanningState, Todo

__all__ = ["next_action", "quote", "render_service_context", "render_state", "todo_line"]


def _indent_rest(text: str, indent: str) -> str:
    """Keep a multi-line value inside its list item: indent every line after the first."""
    return text.replace("\r\n", "\n").replace("\n", "\n" + indent)


def quote(text: str) -> str:
    """``text`` in double quotes, continuation lines indented."""
    return f'"{_indent_rest(text, "  ")}"'


def todo_line(todo: Todo, indent: str = "") -> str:
    """``ID:3 [✓] name`` — the form every planning text uses for a todo.

    Continuation lines of a multi-line name line up under the name's first line.
    """
    head = f"{indent}ID:{todo.id} [{'✓' if todo.completed else ' '}] "
    return head + _indent_rest(todo.name, " " * len(head))


def next_action(state: PlanningState) -> str:
    """A one-line hint for the model's next step (a todo by its id: the plan lists it)."""
    pending = state.pending
    if pending:
        first = pending[0]
        hint = f"Work on ID:{first.id}, then call mark_todo(id={first.id})."
        if state.goal is None:
            hint += " No goal is set: record the objective with create_goal."
        return hint
    if state.goal is None:
        if state.todos:
            return "All todos are done. Set the next objective with create_goal."
        return "Create a goal with create_goal to get started."
    if state.todos:
        return (
            "All todos are done. Check that the goal is met, then call clear_goal "
            "(or add_todo for remaining work)."
        )
    return "Break the goal into steps with add_todo."


def render_state(state: PlanningState, headline: str) -> str:
    """The whole plan under a headline saying what the call did.

    The plan is stated once: the headline names what changed by id, without repeating
    what the plan below lists, and empty parts take one line. A small plan then costs
    the model no more tokens than the same state as JSON, and says more (what changed,
    what to do next).
    """
    lines = [headline]
    lines.append(f"Goal: {_indent_rest(state.goal, '  ') if state.goal else 'No active goal set'}")
    if state.last_cleared_goal:
        lines.append(f"Previous Goal: {_indent_rest(state.last_cleared_goal, '  ')}")
    todos = [f"Todos ({len(state.pending)} pending / {len(state.todos)} total):"]
    todos.extend(todo_line(todo, "  ") for todo in state.todos)
    observations = [f"Observations (the newest {MAX_OBSERVATIONS} are kept):"]
    observations.extend(
        f"  {number}. {_indent_rest(text, '     ')}"
        for number, text in enumerate(state.observations, 1)
    )
    if not state.todos and not state.observations:
        lines.append("No todos or observations yet.")
    else:
        lines.extend(todos if state.todos else ["Todos: none yet."])
        lines.extend(observations if state.observations else ["Observations: none yet."])
    lines.append(f"Next: {next_action(state)}")
    return "\n".join(lines)


def render_service_context(state: PlanningState) -> str:
    """The plan, compact, for an agent's system prompt."""
    if state.goal is None and not state.todos and not state.observations:
        return (
            "Planning: no active plan. For multi-step work, set a goal with create_goal "
            "and track steps with add_todo / mark_todo."
        )
    lines = ["Planning state:"]
    lines.append(f"Goal: {_indent_rest(state.goal, '  ') if state.goal else '(none)'}")
    if state.todos:
        lines.append(f"Todos ({len(state.pending)} pending / {len(state.todos)} total):")
        lines.extend(todo_line(todo, "  ") for todo in state.todos)
    if state.observations:
        lines.append("Recent observations:")
        lines.extend(f"  - {_indent_rest(text, '    ')}" for text in state.observations)
    lines.append(f"Next action: {next_action(state)}")
    return "\n".join(lines)
