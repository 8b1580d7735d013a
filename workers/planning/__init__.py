"""The built-in planning server: a goal, todos and observations per (session, thread).

```python
async with WorkerPool(data_dir=path) as pool:
    planning = pool.server("planning")
    await planning.switch_context("session-1", "thread-1")
    state = await planning.add_todo(name="Write the tests")  # -> PlanningState
```
"""

from ._api import PlanningAPI as PlanningAPI
from ._models import DEFAULT_SCOPE as DEFAULT_SCOPE
from ._models import MAX_OBSERVATIONS as MAX_OBSERVATIONS
from ._models import MAX_TEXT_CHARS as MAX_TEXT_CHARS
from ._models import PlanningState as PlanningState
from ._models import Todo as Todo
from ._server import SERVER_NAME as SERVER_NAME
from ._server import create_server as create_server

__all__ = [
    "DEFAULT_SCOPE",
    "MAX_OBSERVATIONS",
    "MAX_TEXT_CHARS",
    "SERVER_NAME",
    "PlanningAPI",
    "PlanningState",
    "Todo",
    "create_server",
]
