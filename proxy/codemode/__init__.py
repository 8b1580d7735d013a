"""Code mode: a model's program runs over the catalog in a pydantic-monty sandbox.

The room of `WorkerPool.run_code` and `describe_tools`. A program calls each tool the
caller may see by an identifier (`python_names`), as an ``async def`` the stubs
describe (`tool_stubs`); it gets the value `unwrap` gives app code, and only what it
prints (and its last expression) comes back (`CodeResult`). Each call goes through
the pool's one call path, given as a callable (`ToolCaller`), so no rule has a second
implementation here. `CodeLimits` bound a run; `CodeSandbox` owns the Monty processes
(on asyncio; `SyncCodeSandbox` for blocking pools and trio), importing pydantic-monty,
the ``code`` extra, on the first run.

The three meta-tools a model gets in code mode (``search_tools``, ``describe_tools``,
``run_code``) are defined and answered here too (`CODE_META_TOOLS`, `code_response`).

The room imports `protocol`'s public names, the telemetry room's `TRACING` and the
tool_search room's search answer; the pool core imports it, and serve reaches it
through the pool and these public names.
"""

from ._calls import chosen_tools as chosen_tools
from ._calls import code_tools as code_tools
from ._calls import named_handlers as named_handlers
from ._calls import named_progress as named_progress
from ._calls import plain as plain
from ._calls import python_names as python_names
from ._limits import DEFAULT_LIMITS as DEFAULT_LIMITS
from ._limits import CodeLimits as CodeLimits
from ._meta_tools import CODE_META_TOOLS as CODE_META_TOOLS
from ._meta_tools import DESCRIBE_TOOLS as DESCRIBE_TOOLS
from ._meta_tools import RUN_CODE as RUN_CODE
from ._meta_tools import code_response as code_response
from ._meta_tools import code_search_response as code_search_response
from ._meta_tools import read_code as read_code
from ._meta_tools import read_describe as read_describe
from ._result import CodeResult as CodeResult
from ._result import InnerCall as InnerCall
from ._sandbox import CodeSandbox as CodeSandbox
from ._sandbox import ToolCaller as ToolCaller
from ._stubs import STUB_HEADER as STUB_HEADER
from ._stubs import UNTYPED_NOTE as UNTYPED_NOTE
from ._stubs import schema_type as schema_type
from ._stubs import tool_stubs as tool_stubs
from ._sync_sandbox import SyncCodeSandbox as SyncCodeSandbox
from ._sync_sandbox import SyncToolCaller as SyncToolCaller

__all__ = [
    "CODE_META_TOOLS",
    "DEFAULT_LIMITS",
    "DESCRIBE_TOOLS",
    "RUN_CODE",
    "STUB_HEADER",
    "UNTYPED_NOTE",
    "CodeLimits",
    "CodeResult",
    "CodeSandbox",
    "InnerCall",
    "SyncCodeSandbox",
    "SyncToolCaller",
    "ToolCaller",
    "chosen_tools",
    "code_response",
    "code_search_response",
    "code_tools",
    "named_handlers",
    "named_progress",
    "plain",
    "python_names",
    "read_code",
    "read_describe",
    "schema_type",
    "tool_stubs",
]
