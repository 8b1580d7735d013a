"""The built-in servers' typed interfaces match their tools, and type a real proxy's calls."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any

import anyio
import pytest

from nativemcp.protocol.wire import RETURN_TYPE_META_KEY, resolve_type
from nativemcp.proxy import WorkerPool
from nativemcp.workers import BUILTIN_SERVERS, Context, ServerConfig, load_server
from nativemcp.workers.content_store import (
    ContentStoreAPI,
    ListContentResult,
    StoreInfo,
)
from nativemcp.workers.planning import PlanningAPI, PlanningState
from nativemcp.workers.workspace import ListDirectoryResult, WorkspaceAPI, WriteFileResult

pytestmark = pytest.mark.anyio


INTERFACES: list[Any] = [ContentStoreAPI, PlanningAPI, WorkspaceAPI]


def interface_methods(interface: Any) -> dict[str, Any]:
    return {
        name: value
        for name, value in vars(interface).items()
        if not name.startswith("_") and inspect.iscoroutinefunction(value)
    }


@pytest.mark.parametrize("interface", INTERFACES, ids=lambda i: i.server_name)
def test_interface_mirrors_the_servers_tools_exactly(interface: Any, tmp_path: Path) -> None:
    server = load_server(BUILTIN_SERVERS[interface.server_name], ServerConfig(data_dir=tmp_path))
    assert server.name == interface.server_name
    methods = interface_methods(interface)
    assert list(methods) == server.tool_names
    definitions = {tool.name: tool for tool in server.list_tools()}
    for name, method in methods.items():
        # The function the tool was declared on: its signature is what the interface mirrors.
        tool_fn = server._tools[name].fn
        tool_hints = typing.get_type_hints(tool_fn)  # Annotated constraints stripped
        tool_params = [
            param
            for param in inspect.signature(tool_fn).parameters.values()
            if tool_hints.get(param.name) is not Context
        ]
        method_hints = typing.get_type_hints(method)
        self_param, *method_params = inspect.signature(method).parameters.values()
        assert self_param.name == "self"
        assert [p.name for p in method_params] == [p.name for p in tool_params], name
        assert [p.default for p in method_params] == [p.default for p in tool_params], name
        assert all(p.kind is p.KEYWORD_ONLY for p in method_params), name
        assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in tool_params), name
        for param in tool_params:
            assert method_hints[param.name] == tool_hints[param.name], (name, param.name)
        meta = definitions[name].meta or {}
        assert method_hints["return"] == resolve_type(meta.get(RETURN_TYPE_META_KEY)), name


@pytest.mark.real_process
async def test_builtin_interfaces_type_calls_to_real_workers(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with WorkerPool(data_dir=tmp_path, builtins=["content-store", "planning"]) as pool:
            store = pool.server(ContentStoreAPI)
            info = await store.create_store(name="x")
            assert isinstance(info, StoreInfo)
            listing = await store.list_content(store_id=info.store_id)
            assert isinstance(listing, ListContentResult)
            assert listing.contents == []

            planning = pool.server(PlanningAPI)
            state = await planning.add_todo(name="Write the tests")
            assert isinstance(state, PlanningState)
            state = await planning.mark_todo(id=state.todos[0].id)
            assert state.todos[0].completed is True


async def test_workspace_interface_types_calls_in_process(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with WorkerPool(data_dir=tmp_path, builtins=["workspace"]) as pool:
            ws = pool.server(WorkspaceAPI)
            written = await ws.write_file(path="a.txt", content="hello\n")
            assert isinstance(written, WriteFileResult)
            listing = await ws.list_directory()
            assert isinstance(listing, ListDirectoryResult)
            assert [entry.name for entry in listing.entries] == ["a.txt"]
