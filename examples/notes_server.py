"""A server of your own: typed tools in a worker process, called by code and by a model.

Run it:  .venv/bin/python examples/notes_server.py  (or python, in the activated venv)
Or call one tool from the command line (from this folder):
         nativemcp call notes_server:server add_note --args '{"title": "hi", "body": "x"}'
"""

from __future__ import annotations

import anyio
import msgspec

from nativemcp.protocol import ToolError, result_text
from nativemcp.proxy import WorkerPool
from nativemcp.workers import Context, Server


class Note(msgspec.Struct, rename="camel", kw_only=True):
    """One note; camelCase keys in `structuredContent`, snake_case in Python."""

    note_id: int
    title: str
    body: str


class NoteList(msgspec.Struct, rename="camel", kw_only=True):
    notes: list[Note]
    total: int


# Module level: each worker process imports this file and finds `server` by name.
server = Server("notes", description="Keeps short notes in memory")
_notes: dict[int, Note] = {}  # one dict per worker process


def _render_list(result: NoteList) -> str:
    if not result.notes:
        return "No notes yet. Add one with add_note(title, body)."
    lines = [f"{result.total} note{'s' if result.total != 1 else ''}:"]
    lines += [f"{note.note_id}. {note.title} — {note.body}" for note in result.notes]
    return "\n".join(lines)


@server.tool(render=lambda note: f"Saved note {note.note_id}: {note.title!r}")
async def add_note(title: str, body: str, ctx: Context) -> Note:
    """Save a note and return it with its id."""
    if not title.strip():
        # The model reads this text; the caller's code gets a ToolError.
        raise ToolError("A note needs a title: pass a non-empty `title`.")
    await ctx.report_progress(1, 1, "saved")
    note = Note(note_id=len(_notes) + 1, title=title, body=body)
    _notes[note.note_id] = note
    return note


@server.tool(render=_render_list)
def list_notes(contains: str = "") -> NoteList:
    """List the notes, optionally only those whose title or body contains a word."""
    word = contains.casefold()
    found = [n for n in _notes.values() if word in f"{n.title} {n.body}".casefold()]
    return NoteList(notes=found, total=len(found))


async def main() -> None:
    async with WorkerPool([server]) as pool:
        notes = pool.server("notes")
        first = await notes.add_note(title="groceries", body="milk, bread")  # a Note
        assert first.note_id == 1
        await notes.add_note(title="release", body="tag v0.2 on Friday")
        listing = await notes.list_notes()  # the app: a NoteList
        print(f"app: {listing.total} notes, first is {listing.notes[0].title!r}")
        response = await notes.call_tool("list_notes", {"contains": "friday"})
        print("model reads:\n" + result_text(response))  # the LLM: the rendered text
        try:
            await notes.add_note(title=" ", body="no title")
        except ToolError as exc:
            print(f"error for the model: {exc.message}")


# Each worker imports this file again, so top-level code runs there too: start the
# pool only under the guard.
if __name__ == "__main__":
    anyio.run(main)
