"""nativemcp.workers: the server-definition API, the worker-process host, built-in servers."""

__all__: list[str] = []
