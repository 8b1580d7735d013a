"""The public surface: ``__all__`` lists exactly what each package makes public."""

from __future__ import annotations

import re
import subprocess
import sys
import types

import pytest

import nativemcp.protocol
import nativemcp.proxy
import nativemcp.workers


@pytest.mark.parametrize("module", [nativemcp.protocol, nativemcp.workers, nativemcp.proxy])
def test_all_lists_exactly_the_public_names(module: types.ModuleType) -> None:
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    # Names loaded on first use (PEP 562): public too, and each one resolves.
    lazy = set(getattr(module, "_LAZY", ()))
    assert all(getattr(module, name) is not None for name in lazy)
    public |= lazy
    assert set(module.__all__) == public
    assert len(module.__all__) == len(set(module.__all__))


def test_protocol_imports_alone_without_workers_proxy_or_pydantic() -> None:
    code = (
        "import sys, nativemcp.protocol\n"
        "bad = [m for m in sys.modules if m.startswith(('nativemcp.workers', 'nativemcp.proxy'))]\n"
        "bad += [m for m in ('pydantic', 'mcp', 'mcp_types') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_proxy_imports_without_the_mcp_sdk_until_the_boundary_is_used() -> None:
    # Workers re-import the pool's script and so this package: it must stay light.
    code = (
        "import sys, nativemcp.proxy\n"
        "bad = [m for m in ('pydantic', 'mcp', 'mcp_types', 'starlette', 'uvicorn')"
        " if m in sys.modules]\n"
        "assert not bad, bad\n"
        "assert nativemcp.proxy.http_app.__name__ == 'http_app'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_no_bare_top_level_package_names_are_installed() -> None:
    code = (
        "import importlib.util\n"
        "for name in ('protocol', 'workers', 'proxy'):\n"
        "    spec = importlib.util.find_spec(name)\n"
        "    assert spec is None or 'site-packages' in (spec.origin or ''), name\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd="/")


def test_every_exception_lives_in_the_one_module_and_is_drawn_in_its_tree() -> None:
    from nativemcp.protocol import _exceptions

    tree = _exceptions.__doc__ or ""
    for module in (nativemcp.protocol, nativemcp.workers, nativemcp.proxy):
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, nativemcp.protocol.NativeMCPError):
                assert value.__module__ == "nativemcp.protocol._exceptions", name
                assert re.search(rf"^[│├└─ ]*{value.__name__} ", tree, re.M), value.__name__


def test_round_one_exception_names_are_the_new_classes() -> None:
    renamed = {
        "WorkerError": nativemcp.protocol.ServerError,
        "WorkerStartError": nativemcp.protocol.ServerStartError,
        "WorkerCrashed": nativemcp.protocol.ServerCrashed,
        "WorkerTimeout": nativemcp.protocol.CallTimeout,
        "WorkerClosed": nativemcp.protocol.ServerClosed,
    }
    for module in (nativemcp.workers, nativemcp.proxy):
        for old, new in renamed.items():
            assert getattr(module, old) is new
    assert issubclass(nativemcp.protocol.CallTimeout, TimeoutError)
    assert not issubclass(nativemcp.protocol.ToolError, nativemcp.protocol.ServerError)
