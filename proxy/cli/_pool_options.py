"""The options of every verb that starts servers, defined once and applied once.

``--data-dir``, ``--workspace``, ``--mcp-config``, ``--root``, ``--database-url`` and
``--browser-allow`` come from one
parent parser (`pool_options_parser`); `PoolOptions.from_args` checks what was typed,
and `PoolOptions.pool` opens the `WorkerPool` every verb uses. A mistake is one line
that names it: a ``--database-url`` that is not a PostgreSQL URL, a missing driver, a
database that does not answer (why, and what to do), a bad ``--mcp-config`` file.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import re
import shlex
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import anyio

from nativemcp.workers import DATABASE_URL_ENV, is_postgres_url, redact_url

from ._data_dir import DATA_DIR_ENV, default_data_dir
from ._errors import UsageError
from ._servers import ServerChoice

if TYPE_CHECKING:
    from nativemcp.proxy import WorkerPool

__all__ = ["DATABASE_SERVERS", "PoolOptions", "check_database", "pool_options_parser"]

DATABASE_SERVERS: Final = frozenset({"content-store", "planning"})
"""The built-in servers that keep their state in ``--database-url``."""
CONNECT_TIMEOUT: Final = 3
"""Seconds the CLI waits for the database to answer before it starts any server."""
_LOGIN: Final = re.compile(r"nativemcp auth login ('[^']*'|[^\s'\"),;]+)")
"""A login hint in a message (`nativemcp.proxy.external.login_hint`)."""


def pool_options_parser() -> argparse.ArgumentParser:
    """The parent parser of every verb that starts servers (``parents=[...]``)."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("servers")
    group.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"data folder (default: ${DATA_DIR_ENV}, else the user data folder)",
    )
    group.add_argument(
        "--workspace",
        type=Path,
        default=None,
        metavar="DIR",
        help="the workspace server's root folder (default: a folder per session in the "
        "data folder)",
    )
    group.add_argument(
        "--mcp-config",
        type=Path,
        default=None,
        metavar="FILE",
        help="external MCP servers to start too: an mcp.json with mcpServers "
        "(as Claude Desktop, Cursor and VS Code write it)",
    )
    group.add_argument(
        "--database-url",
        default=None,
        metavar="URL",
        help=(
            "keep the content store and planning in this PostgreSQL database, shared "
            f"with other machines (default: ${DATABASE_URL_ENV}; unset: SQLite files in "
            "the data folder)"
        ),
    )
    group.add_argument(
        "--root",
        type=Path,
        action="append",
        default=None,
        metavar="DIR",
        help="a folder external MCP servers may work in (their MCP roots; repeatable)",
    )
    group.add_argument(
        "--pinned",
        type=Path,
        default=None,
        metavar="FILE",
        help="offer only tools whose definitions match this pin file (nativemcp tools "
        "--pin FILE); a changed or new tool is withheld with a warning",
    )
    group.add_argument(
        "--browser-allow",
        action="append",
        default=None,
        metavar="ORIGIN",
        help=(
            "the browser server loads pages only from this origin (scheme://host[:port]; "
            "repeatable), private addresses included (default: any public address)"
        ),
    )
    return parser


def _shown(url: str) -> str:
    """What of a URL may be echoed: its redacted form when it has a host part, else
    nothing (``notaurl`` has no parts to redact, ``user:pw@host`` reads as a scheme)."""
    return f", not {redact_url(url)!r}" if urlsplit(url).netloc else ""


def _why_not(reason: str, url: str) -> str:
    """The cause of a failed connection and the advice that fits it."""
    parts = urlsplit(url)
    where = f"{parts.hostname or 'localhost'}:{parts.port or 5432}"
    if "password authentication failed" in reason or "no password supplied" in reason:
        return f"{where} refused user {parts.username!r}: check the user and password in the URL"
    if "does not exist" in reason and "database" in reason:
        name = parts.path.lstrip("/") or parts.username
        return (
            f"there is no database {name!r} on {where}: create it (createdb {name}) or fix the name"
        )
    if "Connection refused" in reason:
        return f"nothing listens on {where}: start PostgreSQL there, or fix the host and port"
    if "timeout" in reason:
        return f"{where} did not answer in {CONNECT_TIMEOUT} s: check the host, port and firewall"
    if "resolve host" in reason or "translate host name" in reason:
        return f"unknown host {parts.hostname!r}: fix the host in the URL"
    return " ".join(reason.split())


def check_database(url: str | None) -> None:
    """That the driver is installed and the database at ``url`` answers (if one is
    given), before any server starts: blocking, at most `CONNECT_TIMEOUT` seconds.

    Raises:
        UsageError: the ``postgres`` extra is not installed.
        ConnectionError: the database does not answer or refuses (why, and what to do).
    """
    if not url:
        return
    try:
        import psycopg
        import psycopg_pool  # noqa: F401  (the servers need it too)
    except ImportError:
        raise UsageError(
            "--database-url needs the PostgreSQL driver: pip install 'nativemcp[postgres]'"
        ) from None
    try:
        psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT).close()
    except psycopg.Error as exc:
        reason = str(exc)
        password = urlsplit(url).password
        if password:
            reason = reason.replace(password, "***")
        raise ConnectionError(f"cannot use {redact_url(url)}: {_why_not(reason, url)}") from None


@dataclasses.dataclass(frozen=True)
class PoolOptions:
    """The pool options of one command line, checked (see `from_args`)."""

    data_dir: Path
    workspace: Path | None = None
    mcp_config: Path | None = None
    database_url: str | None = None
    """The URL given, or ``$NATIVEMCP_DATABASE_URL``; None: SQLite in ``data_dir``."""
    roots: tuple[Path, ...] | None = None
    """``--root``: the folders external MCP servers may work in (None: no roots)."""
    browser_allow: tuple[str, ...] | None = None
    """``--browser-allow``: the only origins the browser server loads (None: public ones)."""
    pinned: Path | None = None
    """``--pinned``: the pin file tools are checked against (None: every tool offered)."""
    typed: dict[str, str] = dataclasses.field(default_factory=dict, compare=False)
    """The servers of the pools built so far, as the user typed them
    (`ServerChoice.typed`): the command's error messages name them so."""

    def check_no_users(self) -> None:
        """Refuse, before anything starts, an ``--mcp-config`` entry that acts for each
        user (``"grantScope": "user"``) where serve has no OAuth to know them.

        Raises:
            UsageError: such an entry (a file that does not read is the pool's to say).
        """
        from ..external import load_mcp_servers

        try:
            specs = load_mcp_servers(self.mcp_config) if self.mcp_config else []
        except (OSError, ValueError):
            return
        for spec in specs:
            if spec.grant_scope == "user":
                raise UsageError(
                    f'MCP server {spec.name!r} has "grantScope": "user": it acts for each '
                    "user serve authenticates, so serve needs --auth-issuer URL and "
                    '--auth-audience AUD; drop "grantScope" to use the pool\'s own grant'
                )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> PoolOptions:
        """The options of a parsed command line.

        Raises:
            UsageError: a database URL that is not ``postgresql://`` (the password is
                never echoed), or an ``--mcp-config`` file that does not exist.
        """
        url = cls.database_url_of(args)
        if args.mcp_config is not None and not args.mcp_config.is_file():
            raise UsageError(f"--mcp-config: no file {str(args.mcp_config)!r}")
        return cls(
            data_dir=(args.data_dir or default_data_dir()).expanduser(),
            workspace=args.workspace,
            mcp_config=args.mcp_config,
            database_url=url or None,
            roots=tuple(args.root) if args.root else None,
            browser_allow=tuple(args.browser_allow) if args.browser_allow else None,
            pinned=getattr(args, "pinned", None),
        )

    @staticmethod
    def database_url_of(args: argparse.Namespace) -> str | None:
        """``--database-url``, else ``$NATIVEMCP_DATABASE_URL``, else None.

        Raises:
            UsageError: it is not a ``postgresql://`` URL (the password never echoed).
        """
        url, source = args.database_url, "--database-url"
        if url is None:
            url, source = os.environ.get(DATABASE_URL_ENV), f"${DATABASE_URL_ENV}"
        if url and not is_postgres_url(url):
            raise UsageError(
                f"{source} must be a postgresql://user:password@host/database URL{_shown(url)}"
            )
        return url or None

    def command(self, *words: str) -> str:
        """``nativemcp WORDS...`` as the user can paste it: with the ``--mcp-config``
        and the ``--data-dir`` (when not the default) they typed, each word quoted for
        the shell, so that it reaches the same servers and the same grants."""
        argv = ["nativemcp", *words]
        if self.mcp_config is not None:
            argv += ["--mcp-config", str(self.mcp_config)]
        if self.data_dir != default_data_dir():
            argv += ["--data-dir", str(self.data_dir)]
        return shlex.join(argv)

    def pasteable(self, text: str) -> str:
        """``text`` with each ``nativemcp auth login SERVER`` it suggests (a pool's
        message, which knows no command line) made a `command` of this one."""

        def whole(found: re.Match[str]) -> str:
            return self.command("auth", "login", *shlex.split(found[1]))

        return _LOGIN.sub(whole, text)

    @property
    def where(self) -> str:
        """Where the state lives, for messages (a database URL without its password)."""
        return redact_url(self.database_url) if self.database_url else str(self.data_dir)

    def check_database(self, choice: ServerChoice) -> None:
        """`check_database` when ``choice`` runs a server that keeps state in it.

        Raises:
            UsageError: the ``postgres`` extra is not installed.
            ConnectionError: the database does not answer or refuses.
        """
        if DATABASE_SERVERS.intersection(choice.builtins):
            check_database(self.database_url)

    def build(self, choice: ServerChoice, **extra: Any) -> WorkerPool:
        """The `WorkerPool` of ``choice`` with these options (``extra``: more keyword
        arguments of `WorkerPool`). Starts nothing.

        Raises:
            UsageError: the pool refuses its arguments (a bad ``--mcp-config`` file, a
                server that cannot be sent to a worker...), in one line.
        """
        from nativemcp.proxy import WorkerPool

        self.typed.update(choice.typed)
        try:
            return WorkerPool(
                choice.sources,
                data_dir=self.data_dir,
                workspace_root=self.workspace,
                builtins=choice.builtins,
                mcp_servers=self.mcp_config,
                database_url=self.database_url,
                roots=self.roots,
                browser_allowed_origins=self.browser_allow,
                pinned=self.pinned,
                **extra,
            )
        except (ValueError, TypeError, FileNotFoundError) as exc:
            # The arguments come from the command line: say what is wrong with them.
            raise UsageError(str(exc)) from None

    @contextlib.asynccontextmanager
    async def pool(self, choice: ServerChoice, **extra: Any) -> AsyncIterator[WorkerPool]:
        """`check_database`, then `build` and run the pool for the block."""
        await anyio.to_thread.run_sync(self.check_database, choice)
        async with self.build(choice, **extra) as pool:
            yield pool
