"""Code mode: a model's program runs over the catalog in a pydantic-monty sandbox.

The room of `WorkerPool.run_code` and `describe_tools`. A program calls each tool the
caller may see by an identifier (`python_names`), as an ``async def`` the stubs
describe (`tool_stubs`); it gets the value `unwrap` gives app code, and only what it
prints (and its last expression) comes back (`CodeResult`). Each call goes through
the pool's one call path, given as a callable (`ToolCaller`), so no rule has a second
implementation here. `CodeLimits` bound a run; `CodeSandbox` owns the Monty processes
(asyncio only; it imports pydantic-monty, the ``code`` extra, on the first run).

The room imports `protocol`'s public names and the telemetry room's `TRACING`; the
pool core imports it (`CodeSandbox` only on the first run), serve and the agent loop
go through the pool.
"""

from ._calls import chosen_tools as chosen_tools
from ._calls import code_tools as code_tools
from ._calls import plain as plain
from ._calls import python_names as python_names
from ._limits import DEFAULT_LIMITS as DEFAULT_LIMITS
from ._limits import CodeLimits as CodeLimits
from ._result import CodeResult as CodeResult
from ._result import InnerCall as InnerCall
from ._sandbox import CodeSandbox as CodeSandbox
from ._sandbox import ToolCaller as ToolCaller
from ._stubs import STUB_HEADER as STUB_HEADER
from ._stubs import schema_type as schema_type
from ._stubs import tool_stubs as tool_stubs
from ._sync_sandbox import SyncCodeSandbox as SyncCodeSandbox
from ._sync_sandbox import SyncToolCaller as SyncToolCaller

__all__ = [
    "DEFAULT_LIMITS",
    "STUB_HEADER",
    "CodeLimits",
    "CodeResult",
    "CodeSandbox",
    "InnerCall",
    "SyncCodeSandbox",
    "SyncToolCaller",
    "ToolCaller",
    "chosen_tools",
    "code_tools",
    "plain",
    "python_names",
    "schema_type",
    "tool_stubs",
]
