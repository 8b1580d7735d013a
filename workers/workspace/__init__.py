"""The workspace server: sandboxed file tools, a shell, and exports with a download card.

```python
server = create_server(ServerConfig(workspace_root=Path("ws")))
await server.call_tool("write_file", {"path": "notes/a.txt", "content": "hello\\n"})
```

Every path is relative to the workspace root and checked by the sandbox (see
``_sandbox.py`` for the rules). Without ``workspace_root`` the root is a folder per
session under ``data_dir/workspace/`` (session ``default`` until the host switches).
Options (``ServerConfig.options``) are listed on `WorkspaceOptions`.
"""

from . import _models
from ._api import WorkspaceAPI as WorkspaceAPI

# Every typed result is public: the list is `_models.__all__`, kept in one place.
from ._models import *  # noqa: F403
from ._options import WorkspaceOptions as WorkspaceOptions
from ._server import DEFAULT_SESSION as DEFAULT_SESSION
from ._server import create_server as create_server

__all__ = ["DEFAULT_SESSION", "WorkspaceAPI", "WorkspaceOptions", "create_server"]
__all__ += _models.__all__
