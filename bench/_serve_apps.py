"""The servers bench.serve loads: one echo tool behind each MCP HTTP stack, and a floor.

Run as ``python -m bench._serve_apps KIND PORT [HTTP]``; each serves
``http://127.0.0.1:PORT/mcp`` in this one process (its worker processes aside) until
killed, on uvicorn's ``HTTP`` protocol (``httptools``, the default, or ``h11``): for
nativemcp's rows the one ``nativemcp serve --http HTTP`` runs (with its read deadlines),
for the others uvicorn's own; or ``granian`` (Granian's ASGI server, one worker, where
installed: a comparison only, serve does not run on it). Kinds: ``fast`` and
``plain`` (nativemcp serve's app, stateless, with the fast path on and off), ``local``
(the fast path with the echo server in process, as the SDK's and the floor's tools
run: no worker process and no pipe), ``sdk`` (the
official SDK's ``MCPServer``, stateless), ``fastmcp`` (FastMCP's, needs the bench extra)
and ``floor`` (a bare ASGI app that decodes the JSON-RPC request and encodes an answer
with msgspec: what HTTP and JSON cost).

The echo tool is ``async def`` everywhere: what is measured is the stack around a tool.
``sync`` and ``sdk-sync`` serve it as a plain function, which nativemcp's worker and the
SDK alike run in a thread so that it cannot stall their event loop: a thread hop on each
call, whose cost is the tool's way of running, not the stack's.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import msgspec

from nativemcp.workers import Server

echo = Server("echo", description="One echo tool for bench.serve")
echo_sync = Server("echo", description="The echo tool as a plain function, for bench.serve")


@echo.tool
async def say(text: str) -> str:
    """Answer ``text``."""
    return text


@echo_sync.tool(name="say")
def say_sync(text: str) -> str:
    """Answer ``text`` (a plain function: every stack runs it in a thread)."""
    return text


NATIVEMCP_KINDS = frozenset({"fast", "plain", "local", "sync"})
"""The rows served by nativemcp's app (on the serve command's HTTP protocol)."""

_DECODER = msgspec.json.Decoder()
_ENCODER = msgspec.json.Encoder()


async def floor(scope: Any, receive: Any, send: Any) -> None:
    """Decode the request, answer a ``CallToolResult`` of the echoed text."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    request = _DECODER.decode(body)
    text = request["params"]["arguments"]["text"]
    result = {"content": [{"type": "text", "text": text}], "isError": False}
    answer = _ENCODER.encode({"jsonrpc": "2.0", "id": request["id"], "result": result})
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(answer))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": answer})


def _app(kind: str) -> Any:
    if kind in ("fast", "plain", "sync"):
        from nativemcp.proxy import WorkerPool, http_app

        spec = "bench._serve_apps:echo_sync" if kind == "sync" else "bench._serve_apps:echo"
        return http_app(WorkerPool([spec]), stateless=True, fast_path=kind != "plain")
    if kind == "local":
        from nativemcp.proxy import WorkerPool, http_app

        pool = WorkerPool([echo], in_process=["echo"])
        return http_app(pool, stateless=True)
    if kind == "floor":
        return floor
    if kind in ("sdk", "sdk-sync"):
        from mcp.server.mcpserver import MCPServer

        sdk = MCPServer("bench")
        sdk.tool(name="say")(_say_sync if kind == "sdk-sync" else _say)
        return sdk.streamable_http_app(stateless_http=True)
    if kind == "fastmcp":
        from fastmcp import FastMCP

        app = FastMCP("bench")
        app.tool(_say, name="say")
        return app.http_app(stateless_http=True)
    raise SystemExit(
        f"unknown kind {kind!r}: fast, local, plain, sync, sdk, sdk-sync, fastmcp or floor"
    )


async def _say(text: str) -> str:
    """Answer ``text``."""
    return text


def _say_sync(text: str) -> str:
    """Answer ``text`` (run in a thread)."""
    return text


GRANIAN = "granian"
"""Granian's ASGI server (Rust, one worker) in place of uvicorn, where installed."""
KIND_ENV = "NATIVEMCP_BENCH_KIND"
"""Where `granian_app` reads its kind: Granian imports its app by name."""


def granian_app() -> Any:
    """The app of the kind in `KIND_ENV`, for Granian (``--factory``)."""
    return _app(os.environ[KIND_ENV])


def _granian(kind: str, port: int) -> None:
    # Not a dependency (a comparison only): typed loosely, installed or not.
    granian: Any = importlib.import_module("granian")
    os.environ[KIND_ENV] = kind
    server = granian.Granian(
        "bench._serve_apps:granian_app",
        address="127.0.0.1",
        port=port,
        interface="asgi",
        factory=True,
        log_level="warning",
    )
    server.serve()


def _main() -> None:
    import uvicorn

    from nativemcp.proxy.serve import deadline_protocol
    from nativemcp.proxy.serve._defaults import DEFAULT_HTTP, HTTP_PROTOCOLS

    kind, port = sys.argv[1], int(sys.argv[2])
    http = sys.argv[3] if len(sys.argv) > 3 else DEFAULT_HTTP
    if http == GRANIAN:
        _granian(kind, port)
        return
    if http not in HTTP_PROTOCOLS:
        raise SystemExit(f"unknown HTTP protocol {http!r}: {' or '.join(HTTP_PROTOCOLS)}")
    protocol: Any = http
    if kind in NATIVEMCP_KINDS:
        protocol = deadline_protocol(http=http)  # as `nativemcp serve --http` runs it
    uvicorn.run(_app(kind), host="127.0.0.1", port=port, log_level="warning", http=protocol)


if __name__ == "__main__":
    _main()
