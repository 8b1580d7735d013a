"""The built-in browser server: a real Chromium (Debian's, driven by Playwright).

```python
async with WorkerPool(data_dir=path, builtins=["browser"],
                      browser_allowed_origins=["http://127.0.0.1:8000"]) as pool:
    browser = pool.server(BrowserAPI)
    await browser.navigate(url="http://127.0.0.1:8000/")   # -> NavigateResult
    page = await browser.snapshot()                         # -> SnapshotResult
    await browser.click(ref=page.refs[0])                   # -> ActionResult
```

Pages load only over http(s) and, by default, only from public addresses (see
``_guard.py``); ``execute_script`` is off unless enabled. Options
(``ServerConfig.options``) are listed on `BrowserOptions`. Needs the ``browser`` extra
(Playwright) and a Chromium binary; the tools answer with a clear error without one.
"""

from . import _models
from ._api import BrowserAPI as BrowserAPI

# Every typed result is public: the list is `_models.__all__`, kept in one place.
from ._models import *  # noqa: F403
from ._options import BrowserOptions as BrowserOptions
from ._server import DEFAULT_SESSION as DEFAULT_SESSION
from ._server import SERVER_NAME as SERVER_NAME
from ._server import create_server as create_server

__all__ = ["DEFAULT_SESSION", "SERVER_NAME", "BrowserAPI", "BrowserOptions", "create_server"]
__all__ += _models.__all__
