"""``nativemcp tools [SERVER...]``: what each server offers, without a client.

```
$ nativemcp tools planning
planning: 6 tools
  add_todo(name: string)
      Add a todo to the current plan.
  ...
```

Each tool is listed under its server with its arguments (``name?`` is optional) and the
first line of its description; ``--json`` prints the definitions an MCP client gets
(full names, input schemas, the service in ``_meta``). No SERVER: every built-in and
every server of ``--mcp-config``.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import msgspec

from nativemcp.protocol import Tool, service_info
from nativemcp.workers import BUILTIN_SERVERS

from .._pins import ToolPins
from ._content import Runner
from ._pool_options import PoolOptions, pool_options_parser
from ._servers import resolve_servers

__all__ = ["add_tools_parser", "signature", "summary"]

_DESCRIPTION_WIDTH: Final = 100
"""Characters of a description's first sentence shown in the listing."""
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s")


def add_tools_parser(commands: Any) -> Runner:
    """Add the ``tools`` verb to the CLI's subcommands; returns its runner."""
    tools = commands.add_parser(
        "tools",
        parents=[pool_options_parser()],
        help="list servers' tools: names, arguments, descriptions (--json: the definitions)",
    )
    tools.add_argument(
        "servers",
        nargs="*",
        metavar="SERVER",
        help="a built-in name, module:attribute, path/to/file.py:attribute, or a server "
        "of --mcp-config (default: every built-in and every --mcp-config server)",
    )
    tools.add_argument(
        "--json", action="store_true", help="print the tool definitions as an MCP client gets them"
    )
    tools.add_argument(
        "--pin",
        type=Path,
        default=None,
        metavar="FILE",
        help="write a hash of each listed tool's definition to FILE, for --pinned FILE "
        "(review the tools first)",
    )
    return _tools


def _type_of(schema: Mapping[str, Any]) -> str:
    """A JSON schema's type in a few characters (``string``, ``integer[]``, ``a|b``)."""
    if "enum" in schema:
        return "|".join(map(str, schema["enum"]))
    if isinstance(schema.get("$ref"), str):  # a named type: "#/$defs/Replacement"
        return str(schema["$ref"]).rpartition("/")[2]
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(map(str, kind))
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"{_type_of(schema['items'])}[]"
    if isinstance(kind, str):
        return kind
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            return "|".join(_type_of(o) for o in options if isinstance(o, Mapping))
    return "any"


def signature(tool: Tool, name: str) -> str:
    """``name(arg: type, optional?: type)`` from the tool's input schema."""
    schema = tool.input_schema or {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    arguments = [
        f"{arg}{'' if arg in required else '?'}: "
        + _type_of(spec if isinstance(spec, Mapping) else {})
        for arg, spec in properties.items()
    ]
    return f"{name}({', '.join(arguments)})"


def summary(description: str | None) -> str:
    """The first sentence of a description's first paragraph, on one line, at most
    `_DESCRIPTION_WIDTH` characters."""
    paragraph = " ".join((description or "").strip().split("\n\n")[0].split())
    first = _SENTENCE_END.split(paragraph, maxsplit=1)[0] or "(no description)"
    if len(first) > _DESCRIPTION_WIDTH:
        first = first[: _DESCRIPTION_WIDTH - 1] + "…"
    return first


async def _tools(args: argparse.Namespace, options: PoolOptions) -> int:
    choice = resolve_servers(args.servers, mcp_config=options.mcp_config is not None)
    if not args.servers:
        choice = dataclasses.replace(choice, builtins=tuple(BUILTIN_SERVERS))
    async with options.pool(choice) as pool:
        # No SERVER: the external servers of --mcp-config count as chosen too.
        names = choice.names(pool.names) if args.servers else pool.names
        for name in names:
            pool.server(name)  # an unknown name is an error that lists the servers
        listed = await pool.list_tools()
    by_server: dict[str, list[tuple[str, Tool]]] = {name: [] for name in names}
    for tool in listed:
        service = service_info(tool)
        if service is not None and service.server_name in by_server:
            by_server[service.server_name].append((service.tool_name, tool))
    if args.pin is not None:
        chosen = [tool for tools in by_server.values() for _, tool in tools]
        ToolPins.of((tool.name, tool) for tool in chosen).save(args.pin)
        print(f"pinned {len(chosen)} tool definitions in {args.pin}")
        return 0
    if args.json:
        chosen = [tool for tools in by_server.values() for _, tool in tools]
        print(msgspec.json.encode(chosen).decode())
        return 0
    for number, (server, tools) in enumerate(by_server.items()):
        if number:
            print()
        print(f"{server}: {len(tools)} tool{'' if len(tools) == 1 else 's'}")
        for name, tool in tools:
            print(f"  {signature(tool, name)}")
            print(f"      {options.pasteable(summary(tool.description))}")
    return 0
