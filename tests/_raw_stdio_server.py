"""A hand-written MCP stdio server that misbehaves on demand, for the edge tests.

It speaks newline-delimited JSON-RPC without the SDK, so that it can write what the
SDK never would: a stray non-UTF-8 byte, junk lines, binary noise before ``initialize``,
a tool list with a duplicate or an invalid ``inputSchema``, and children that leave its
process group or session. ``python tests/_raw_stdio_server.py CONFIG_JSON`` where the
config holds any of:

- ``tools``: the tool list to answer ``tools/list`` with (default: one ``echo``);
- ``junk_before_init``: bytes (latin-1 text) written before anything is read;
- ``junk_lines``: how many non-JSON lines to write after ``initialize``'s answer;
- ``stray_byte_on``: a tool name whose call writes a line ``b"\\xff"`` before its answer,
  and the answer with the byte ``0xe9`` in place of ``STRAY`` in the text;
- ``close_stdout_on``: a tool name whose call closes stdout and sleeps (the process lives);
- ``exit_on``: a tool name whose call ends the process (exit status 3) unanswered;
- ``grandchild``: ``"fork"`` or ``"setsid"``; a ``sleep`` started that way, its pid
  written to the file ``grandchild_pid``.

``echo`` answers ``{"text": ...}`` back as text; ``pid`` answers the server's pid.
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


def _send(message: dict[str, Any]) -> None:
    sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def _start_grandchild(how: str, pid_file: str) -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(3999)"]
    if how == "setsid":
        child = subprocess.Popen(sleeper, start_new_session=True, stdin=subprocess.DEVNULL)
    else:
        child = subprocess.Popen(sleeper, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    with open(pid_file + ".part", "w") as out:
        out.write(str(child.pid))
    os.replace(pid_file + ".part", pid_file)  # whole or absent for a reader


def main(config: dict[str, Any]) -> None:
    tools = config.get("tools", [ECHO, PID])
    if "junk_before_init" in config:
        sys.stdout.buffer.write(str(config["junk_before_init"]).encode("latin-1"))
        sys.stdout.buffer.flush()
    if "grandchild" in config:
        _start_grandchild(config["grandchild"], config["grandchild_pid"])
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            continue  # a notification
        if method == "initialize":
            _send(
                {
                    "jsonrpc": "2.0",
                    "id": ident,
                    "result": {
                        "protocolVersion": message["params"]["protocolVersion"],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "raw", "version": "1"},
                    },
                }
            )
            for index in range(int(config.get("junk_lines", 0))):
                sys.stdout.buffer.write(f"junk line {index}, not JSON\n".encode())
            sys.stdout.buffer.flush()
        elif method == "tools/list":
            _send({"jsonrpc": "2.0", "id": ident, "result": {"tools": tools}})
        elif method == "tools/call":
            name = message["params"]["name"]
            arguments = message["params"].get("arguments") or {}
            text = str(os.getpid()) if name == "pid" else str(arguments.get("text", ""))
            result = {"content": [{"type": "text", "text": text}], "isError": False}
            answer = json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode()
            if name == config.get("stray_byte_on"):
                # A line of one stray byte, then the answer with a Latin-1 byte in its text.
                answer = b"\xff\n" + answer.replace(b"STRAY", b"caf\xe9")
            elif name == config.get("close_stdout_on"):
                os.close(1)
                time.sleep(3600)
            elif name == config.get("exit_on"):
                os._exit(3)
            sys.stdout.buffer.write(answer + b"\n")
            sys.stdout.buffer.flush()
        else:
            error = {"code": -32601, "message": f"no method {method}"}
            _send({"jsonrpc": "2.0", "id": ident, "error": error})


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
