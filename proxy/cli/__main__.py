"""``python -m nativemcp.proxy.cli``: the ``nativemcp`` command without its script."""

import sys

from ._main import main

if __name__ == "__main__":
    sys.exit(main())
