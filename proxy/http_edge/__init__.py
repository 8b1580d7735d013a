"""The HTTP edge both of nativemcp's HTTP apps share: serve's and the console's.

`_rebinding` checks Host and Origin against DNS rebinding with the official SDK's
transport-security checks (a local-only default, the canonical form of a Host header);
`_headers` reads one header of a request, and drops the whitespace around header
values; `_respond` writes a whole response at once. It imports nothing of nativemcp;
`serve/` and `console/` import it by the names below.
"""

from ._headers import header_value as header_value
from ._headers import trimmed_headers as trimmed_headers
from ._rebinding import LOCAL_HOSTS as LOCAL_HOSTS
from ._rebinding import PLAIN_HOST as PLAIN_HOST
from ._rebinding import CanonicalHost as CanonicalHost
from ._rebinding import RebindingGuard as RebindingGuard
from ._rebinding import canonical_host as canonical_host
from ._rebinding import local_only as local_only
from ._respond import respond as respond

__all__ = [
    "LOCAL_HOSTS",
    "PLAIN_HOST",
    "CanonicalHost",
    "RebindingGuard",
    "canonical_host",
    "header_value",
    "local_only",
    "respond",
    "trimmed_headers",
]
