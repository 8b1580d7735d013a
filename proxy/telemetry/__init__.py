"""Telemetry: OpenTelemetry spans per the MCP conventions on the caller's side.

The pool core asks `TRACING` (one attribute, looked up again when a pool starts) whether
this process records spans, and only then calls in here: a client span around each
operation (`traced`, `traced_sync`), the trace context a worker call carries
(`wire_context`), the spans a worker sends back re-emitted through the app's provider
(`emit_worker_spans`). What both ends share (attribute names, outcomes, the server
span) is the public `nativemcp.workers.telemetry`. The room imports the public names of
`protocol` and `workers` and nothing of the pool core; OpenTelemetry itself is imported
only once the app has (see `refresh`).
"""

from ._client import current_call_span as current_call_span
from ._client import local_server_span as local_server_span
from ._client import log_ids as log_ids
from ._client import record_restart as record_restart
from ._client import traced as traced
from ._client import traced_sync as traced_sync
from ._client import waiting_span as waiting_span
from ._client import wire_context as wire_context
from ._reemit import emit_worker_spans as emit_worker_spans
from ._state import ACTIVE_REQUESTS as ACTIVE_REQUESTS
from ._state import RESTARTS as RESTARTS
from ._state import TRACING as TRACING
from ._state import Tracing as Tracing
from ._state import refresh as refresh

__all__ = [
    "ACTIVE_REQUESTS",
    "RESTARTS",
    "TRACING",
    "Tracing",
    "current_call_span",
    "emit_worker_spans",
    "local_server_span",
    "log_ids",
    "record_restart",
    "refresh",
    "traced",
    "traced_sync",
    "waiting_span",
    "wire_context",
]
