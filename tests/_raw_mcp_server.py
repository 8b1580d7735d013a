"""A hand-written MCP server that misbehaves on demand, for the edge tests.

It speaks JSON-RPC without the SDK, so that it can write what the SDK never would: a
stray non-UTF-8 byte, junk lines, binary noise before ``initialize``, a tool list with
a duplicate or an invalid ``inputSchema``, and children that leave its process group or
session. Over stdio: ``python tests/_raw_mcp_server.py CONFIG_JSON``; over Streamable
HTTP (JSON answers, no session): mount ``http_app(config)``. The config holds any of:

- ``tools``: the tool list to answer ``tools/list`` with (default: ``echo`` and ``pid``);
- ``endless_tools``: every ``tools/list`` page names one tool and the next page;
- ``methods_file``: a file each request's and notification's method is appended to;
- ``pid_file``: a file the server's pid is written to at its start;
- ``ask_together``: calls of the tool ``ask`` (list it in ``tools``) are held until this many came,
  then the client is asked (``elicitation/create``) once for each, mid-call, and each
  call answers ``KEY: TEXT`` of its answer (or ``KEY: refused: ...``);
- ``junk_before_init``: bytes (latin-1 text) written before anything is read;
- ``junk_lines``: how many non-JSON lines to write after ``initialize``'s answer;
- ``stray_byte_on``: a tool name whose call writes a line ``b"\\xff"`` before its answer,
  and the answer with the byte ``0xe9`` in place of ``STRAY`` in the text;
- ``close_stdout_on``: a tool name whose call closes stdout and sleeps (the process lives);
- ``exit_on``: a tool name whose call ends the process (exit status 3) unanswered;
- ``endless_line_on``: a tool name whose call writes stdout without a newline, forever;
- ``progress_on``: a tool name whose call sends a progress notification with the
  message ``halfway`` (when the call carries a progress token) before its answer;
- ``change_tools_on``: a tool name whose call makes ``changed_tools`` the tool list and
  sends ``notifications/tools/list_changed`` before its answer;
- ``failing_polls``: a ``tools/call`` with ``task`` creates a task (polled every
  10 ms) whose ``tasks/result`` is held until a ``tasks/get`` came, which fails
  (-32603), and then answers the call's ``echo`` result (2025-11-25 tasks, stdio only);
- ``grandchild``: ``"fork"`` or ``"setsid"``; a ``sleep`` started that way, its pid
  written to the file ``grandchild_pid`` (the setsid one keeps the server's stdout).

The stdio-only behaviours do nothing over HTTP. ``echo`` answers its ``text``; ``pid``
answers the server's pid.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

ECHO: dict[str, Any] = {
    "name": "echo",
    "description": "Echo text back.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}
PID: dict[str, Any] = {"name": "pid", "inputSchema": {"type": "object"}}


def answer(message: dict[str, Any], config: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON-RPC answer to ``message``; None for a notification."""
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": "change_tools_on" in config}},
            "serverInfo": {"name": "raw", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": config.get("tools", [ECHO, PID])}
        if config.get("endless_tools"):
            page = int((message.get("params") or {}).get("cursor") or 0)
            result = {"tools": [{**ECHO, "name": f"t{page}"}], "nextCursor": str(page + 1)}
    elif method == "ping":
        result = {}
    elif method == "tools/call":
        name = message["params"]["name"]
        arguments = message["params"].get("arguments") or {}
        text = str(os.getpid()) if name == "pid" else str(arguments.get("text", ""))
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        error = {"code": -32601, "message": f"no method {method}"}
        return {"jsonrpc": "2.0", "id": ident, "error": error}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def _failing_poll(message: dict[str, Any], held: dict[str, Any]) -> bool:
    """`failing_polls`: answer a task-augmented call, ``tasks/result`` and ``tasks/get``
    as that config says; False for any other message."""
    method, params = message.get("method"), message.get("params") or {}
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message.get("id")}
    if method == "tools/call" and "task" in params:
        held["call"] = message
        now = "2026-01-01T00:00:00Z"
        task = {"taskId": "t1", "status": "working", "createdAt": now, "lastUpdatedAt": now}
        reply["result"] = {"task": {**task, "ttl": 60000, "pollInterval": 10}}
    elif method == "tasks/result":
        held["result"] = message
        return True
    elif method == "tasks/get":
        reply["error"] = {"code": -32603, "message": "the status store is away"}
        _write(json.dumps(reply).encode() + b"\n")
        result = answer(held.pop("call"), {})
        assert result is not None
        reply = {**result, "id": held.pop("result")["id"]}
    else:
        return False
    _write(json.dumps(reply).encode() + b"\n")
    return True


def _start_grandchild(how: str, pid_file: str) -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(3999)"]
    if how == "setsid":
        child = subprocess.Popen(sleeper, start_new_session=True, stdin=subprocess.DEVNULL)
    else:
        child = subprocess.Popen(sleeper, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    with open(pid_file + ".part", "w") as out:
        out.write(str(child.pid))
    os.replace(pid_file + ".part", pid_file)  # whole or absent for a reader
    # Every start's grandchild, for a test whose server restarts to clean up after.
    with open(pid_file + ".all", "a") as every:
        every.write(f"{child.pid}\n")


def _write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def main(config: dict[str, Any]) -> None:
    """Serve over stdio until stdin ends."""
    if "pid_file" in config:
        with open(config["pid_file"] + ".part", "w") as out:
            out.write(str(os.getpid()))
        os.replace(config["pid_file"] + ".part", config["pid_file"])
    if "junk_before_init" in config:
        _write(str(config["junk_before_init"]).encode("latin-1"))
    if "grandchild" in config:
        _start_grandchild(config["grandchild"], config["grandchild_pid"])
    asks: list[dict[str, Any]] = []  # calls of `ask`, held until `ask_together` came
    held: dict[str, Any] = {}  # `failing_polls`: the task's call, its tasks/result
    for line in sys.stdin:
        message = json.loads(line)
        if "methods_file" in config and "method" in message:
            with open(config["methods_file"], "a") as methods:
                methods.write(message["method"] + "\n")
        if "method" not in message:  # the client's answer to one of our questions
            _answer_ask(asks[int(message["id"])], message)
            continue
        if message.get("method") == "tools/call" and message["params"]["name"] == "ask":
            asks.append(message)
            if len(asks) == int(config.get("ask_together", 1)):
                # Every call is in flight: ask the client once for each, mid-call.
                for index, call in enumerate(asks):
                    key = call["params"]["arguments"]["key"]
                    params = {
                        "message": f"a reply for {key}",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {"text": {"type": "string"}},
                        },
                    }
                    question = {"id": index, "method": "elicitation/create", "params": params}
                    _write(json.dumps({"jsonrpc": "2.0", **question}).encode() + b"\n")
            continue
        if config.get("failing_polls") and _failing_poll(message, held):
            continue
        reply = answer(message, config)
        if reply is None:
            continue
        data = json.dumps(reply).encode()
        tool = (message.get("params") or {}).get("name")
        if message.get("method") == "tools/call":
            if tool == config.get("stray_byte_on"):
                # A line of one stray byte, then the answer with a Latin-1 byte in its text.
                data = b"\xff\n" + data.replace(b"STRAY", b"caf\xe9")
            elif tool == config.get("close_stdout_on"):
                os.close(1)
                time.sleep(3600)
            elif tool == config.get("exit_on"):
                os._exit(3)
            elif tool == config.get("endless_line_on"):
                while True:  # a line that never ends
                    _write(b"x" * 65536)
            elif tool == config.get("progress_on"):
                token = (message["params"].get("_meta") or {}).get("progressToken")
                if token is not None:
                    progress = {"progressToken": token, "progress": 1, "message": "halfway"}
                    note = {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": progress,
                    }
                    _write(json.dumps(note).encode() + b"\n")
            elif tool == config.get("change_tools_on"):
                config["tools"] = config["changed_tools"]
                changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
                _write(json.dumps(changed).encode() + b"\n")
        _write(data + b"\n")
        if message.get("method") == "initialize":
            junk = int(config.get("junk_lines", 0))
            _write(b"".join(f"junk line {i}, not JSON\n".encode() for i in range(junk)))


def _answer_ask(call: dict[str, Any], answer: dict[str, Any]) -> None:
    """Answer a call of `ask` with what its client answered: the text, or the error."""
    key = call["params"]["arguments"]["key"]
    if "error" in answer:
        text, is_error = f"{key}: refused: {answer['error']['message']}", True
    else:
        text, is_error = f"{key}: {answer['result']['content']['text']}", False
    result = {"content": [{"type": "text", "text": text}], "isError": is_error}
    _write(json.dumps({"jsonrpc": "2.0", "id": call["id"], "result": result}).encode() + b"\n")


def http_app(config: dict[str, Any]) -> Any:
    """An ASGI app answering Streamable HTTP POSTs with plain JSON (no session)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        reply = answer(json.loads(body), config) if scope["method"] == "POST" else None
        if reply is None:  # a notification, or a GET for a stream this server never opens
            status = 202 if scope["method"] == "POST" else 405
            await send({"type": "http.response.start", "status": status, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": json.dumps(reply).encode()})

    return app


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
