"""The ``nativemcp`` command line: its verbs and the demo.

The outermost room: it may import every other room of `nativemcp.proxy` (the pool core,
`serve`, `console`, `llm`) and the public names of `nativemcp.protocol` and
`nativemcp.workers`; nothing imports it. `_main` builds the parser and dispatches;
`_content` holds the content-store verbs and ``call``, `_serve` and `_console` the verbs
that keep running, `_demo` the main job.
"""

from ._data_dir import DATA_DIR_ENV as DATA_DIR_ENV
from ._data_dir import default_data_dir as default_data_dir
from ._main import main as main

__all__ = ["DATA_DIR_ENV", "default_data_dir", "main"]
