"""The ``nativemcp`` command line: its verbs and the demo.

The outermost room: it may import every other room of `nativemcp.proxy` (the pool core,
`serve`, `console`, `llm`) and the public names of `nativemcp.protocol` and
`nativemcp.workers`; nothing imports it. `_main` builds the parser and dispatches;
`_content` holds the content-store verbs and ``call`` (`_next_steps`: their hints as
commands), `_tools` the ``tools`` verb, `_serve` and `_console` the verbs that keep
running (`_listen`: bind before announcing), `_demo` the main job. Every verb names
servers by `_servers` and takes the pool options of `_pool_options`; `_errors` turns
what goes wrong into one line.
"""

from ._data_dir import DATA_DIR_ENV as DATA_DIR_ENV
from ._data_dir import default_data_dir as default_data_dir
from ._main import main as main

__all__ = ["DATA_DIR_ENV", "default_data_dir", "main"]
