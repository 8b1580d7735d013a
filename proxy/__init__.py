"""nativemcp.proxy: the worker pool, typed proxies and the command line."""

__all__: list[str] = []
