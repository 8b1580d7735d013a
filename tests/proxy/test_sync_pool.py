"""The blocking pool (`SyncWorkerPool`) with real worker processes: typed calls, threads,
crashes, timeouts and shutdown."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar, Protocol

import pytest
from _process import alive
from _servers import Item, Listing

from nativemcp.protocol import (
    BackendType,
    ServiceInfo,
    ToolError,
    UnknownTool,
    service_info,
    tool_ui,
    unwrap,
)
from nativemcp.proxy import (
    ArgumentsError,
    CallTimeout,
    RestartPolicy,
    ServerClosed,
    ServerCrashed,
    ServerStartError,
    SyncWorkerPool,
    UnknownServer,
)
from nativemcp.proxy.tool_search import ToolProfile

pytestmark = pytest.mark.real_process


@pytest.fixture(scope="module")
def pool() -> Iterator[SyncWorkerPool]:
    with SyncWorkerPool(["_servers:server"], timeout=10) as pool:
        yield pool


def test_typed_method_returns_the_tools_own_types(pool: SyncWorkerPool) -> None:
    listing = pool.server("testing").listing(count=3)
    assert isinstance(listing, Listing)
    assert listing.total == 3
    assert isinstance(listing.contents[0], Item)
    assert listing.contents[0].added == dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)


def test_call_tool_returns_the_full_response_with_the_rich_text(pool: SyncWorkerPool) -> None:
    response = pool.server("testing").call_tool("rendered_listing", {"count": 2})
    assert response.result is not None
    assert response.result.content[0].text.startswith("2 files: file0.md")  # type: ignore[union-attr]
    assert unwrap(response, Listing).total == 2


def test_a_tool_error_raises_with_the_tools_message(pool: SyncWorkerPool) -> None:
    with pytest.raises(ToolError, match="disk full"):
        pool.server("testing").fail(message="disk full")


def test_threads_sharing_the_pool_each_get_their_own_answers(pool: SyncWorkerPool) -> None:
    testing = pool.server("testing")

    def run(worker: int) -> list[tuple[str, str]]:
        pairs = []
        for call in range(40):
            text = f"thread {worker} call {call}"
            pairs.append((text, testing.echo(text=text)))
        return pairs

    with ThreadPoolExecutor(8) as executor:
        results = list(executor.map(run, range(8)))
    assert sum(len(pairs) for pairs in results) == 320
    for pairs in results:
        for sent, answered in pairs:
            assert answered == sent


def test_frames_the_socket_takes_only_in_parts_arrive_whole_from_every_thread() -> None:
    with SyncWorkerPool(["_servers:server"], timeout=10) as pool:
        testing = pool.server("testing")
        # A send buffer of a few KiB: the non-blocking write that keeps the GIL takes
        # only the first part of these frames, and the rest must follow in order, with
        # other threads writing theirs meanwhile.
        conn = pool._workers["testing"]._conn
        assert conn is not None
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)

        def run(worker: int) -> list[bool]:
            texts = [f"{worker}:{size}:" + "x" * size for size in (100, 9_000, 60_000, 200_000)]
            return [testing.echo(text=text) == text for text in texts for _ in range(3)]

        with ThreadPoolExecutor(4) as executor:
            results = list(executor.map(run, range(4)))
        assert results == [[True] * 12] * 4


def test_a_crash_fails_the_call_of_every_waiting_thread() -> None:
    with SyncWorkerPool(["_servers:server"], timeout=10) as pool:
        testing = pool.server("testing")
        first = testing.pid()
        with ThreadPoolExecutor(4) as executor:
            waiting = [executor.submit(testing.block, seconds=30) for _ in range(4)]
            # The kill lands while the calls are in flight (or before some are sent:
            # those fail too); one of them is reading the socket, the others sleep.
            threading.Event().wait(0.3)
            os.kill(first, signal.SIGKILL)
            for call in waiting:
                with pytest.raises(ServerCrashed):
                    call.result(timeout=10)
        assert testing.echo(text="back") == "back"


def test_a_slow_call_does_not_hold_up_other_threads(pool: SyncWorkerPool) -> None:
    testing = pool.server("testing")
    with ThreadPoolExecutor(2) as executor:
        slow = executor.submit(testing.block, seconds=1.0)
        # While one thread waits for its reply (and may be the one reading the socket),
        # another's calls go through.
        assert [testing.echo(text=str(i)) for i in range(20)] == [str(i) for i in range(20)]
        assert slow.result(timeout=10) == "done"


def test_a_timed_out_call_raises_and_the_worker_serves_on(pool: SyncWorkerPool) -> None:
    testing = pool.server("testing")
    with pytest.raises(CallTimeout):
        testing.sleepy(key="sync-timeout", seconds=5, call_timeout=0.2)
    assert testing.saw_cancel(key="sync-timeout") is True
    assert testing.echo(text="still here") == "still here"


def test_switch_context_scopes_later_calls(pool: SyncWorkerPool) -> None:
    testing = pool.server("testing")
    testing.switch_context("session-1", "thread-1")
    assert testing.scope() == {"session": "session-1", "thread": "thread-1"}
    testing.switch_context(None)
    assert isinstance(testing.get_service_context(), str)
    testing.ping()
    assert [tool.name for tool in testing.list_tools()][:2] == ["listing", "items"]


def test_a_crashed_worker_fails_its_calls_and_the_next_call_restarts_it() -> None:
    with SyncWorkerPool(["_servers:server"], timeout=10) as pool:
        testing = pool.server("testing")
        first = testing.pid()
        with ThreadPoolExecutor(1) as executor:
            waiting = executor.submit(testing.block, seconds=30)
            # The kill lands while the call is in flight (or before it is sent: both fail).
            threading.Event().wait(0.3)
            os.kill(first, signal.SIGKILL)
            with pytest.raises(ServerCrashed):
                waiting.result(timeout=10)
        second = testing.pid()
        assert second != first
        assert testing.echo(text="back") == "back"


def test_a_worker_that_keeps_crashing_is_given_up_on_under_the_pools_policy() -> None:
    policy = RestartPolicy(max_restarts=1, window=600)
    with SyncWorkerPool(["_servers:server"], timeout=10, restart=policy) as pool:
        testing = pool.server("testing")

        def echo_after_a_crash(text: str) -> str:
            # The call that finds the connection dead fails; the one after restarts.
            with contextlib.suppress(ServerCrashed):
                return str(testing.echo(text=text))
            return str(testing.echo(text=text))

        os.kill(testing.pid(), signal.SIGKILL)
        assert echo_after_a_crash("once") == "once"  # the one restart the budget allows
        os.kill(testing.pid(), signal.SIGKILL)
        with pytest.raises(ServerStartError, match=r"'testing' stopped restarting after 1 re"):
            echo_after_a_crash("twice")


def test_closing_stops_every_worker_and_refuses_later_calls() -> None:
    with SyncWorkerPool(["_servers:server"], timeout=10) as pool:
        testing = pool.server("testing")
        pid = testing.pid()
        assert alive(pid)
    assert not alive(pid)
    with pytest.raises(ServerClosed):
        testing.echo(text="too late")
    with pytest.raises(ServerClosed):
        pool.server("testing")


def test_an_unknown_server_names_the_servers(pool: SyncWorkerPool) -> None:
    with pytest.raises(UnknownServer, match="testing"):
        pool.server("nope")


def test_arguments_that_cannot_be_sent_are_refused_before_sending(pool: SyncWorkerPool) -> None:
    testing = pool.server("testing")
    with pytest.raises(ArgumentsError, match="lone surrogate"):
        testing.call_tool("\ud800", {})
    with pytest.raises(ArgumentsError, match=r"tuple key \(1, 2\)"):
        testing.call_tool("echo", {"text": {(1, 2): "a"}})
    assert testing.echo(text="fine") == "fine"


def test_a_server_that_fails_to_start_raises_at_start() -> None:
    with pytest.raises(ServerStartError), SyncWorkerPool(["_servers:no_such_server"]):
        pass


class SyncTesting(Protocol):
    server_name: ClassVar[str] = "testing"

    def listing(self, count: int = 20) -> Listing: ...


def test_a_typed_interface_gives_blocking_typed_methods(pool: SyncWorkerPool) -> None:
    testing = pool.server(SyncTesting)
    assert testing.listing(count=2).contents[1].file_name == "file1.md"


def test_a_tool_asking_its_client_is_told_at_once_that_there_is_none() -> None:
    with SyncWorkerPool(["_servers:asking"], timeout=10) as pool:
        with pytest.raises(ToolError, match="no client"):
            pool.server("asking").sample(question="hello?")
        assert pool.server("asking").call_tool("sample", {"question": "x"}).result is not None


def test_search_tools_ranks_every_server_and_call_tool_takes_the_full_name() -> None:
    # BM25 alone: a profile whose tools match no word of the query finds none.
    servers = ["_servers:server", "_serve_servers:other"]
    with SyncWorkerPool(servers, timeout=10, search_embed=False) as pool:
        (best,) = pool.search_tools("echo some text back", 1)
        assert best.name == "testing__echo" and best.server == "testing"
        assert best.input_schema["required"] == ["text"]
        assert pool.search_tools("ping the other server", 1)[0].name == "other__ping_other"
        only_other = ToolProfile(tools=("other__*",))
        assert pool.search_tools("echo some text back", profile=only_other) == []
        response = pool.call_tool(best.name, {"text": "hi"})
        assert response.result is not None
        assert response.result.content[0].text == "hi"  # type: ignore[union-attr]
        with pytest.raises(UnknownTool, match="did you mean testing__echo"):
            pool.call_tool("testing__ech", {})
        with pytest.raises(UnknownTool):
            pool.call_tool("echo", {"text": "a base name is not a full name"})
        # The index is built once per listing: again only when a worker lists anew.
        built = pool._tool_index
        pool.search_tools("echo")
        assert pool._tool_index is built
        pool.server("testing").list_tools()
        pool.search_tools("echo")
        assert pool._tool_index is not built
    with pytest.raises(ServerClosed):
        pool.search_tools("echo")


def test_the_sync_pool_lists_every_tool_and_says_which_servers_offer_apps() -> None:
    with SyncWorkerPool(["_app_servers:alpha", "_serve_servers:other"], timeout=10) as pool:
        listed = {tool.name: tool for tool in pool.list_tools()}
        found = [match.name for match in pool.search_tools("alpha refreshed app", 10)]
        offered = {name: pool.offers_apps(name) for name in pool.names}
        with pytest.raises(UnknownServer):
            pool.offers_apps("alph")
        # The app's catalog has the tool only alpha's app calls; the model's search not.
        assert "alpha__refresh" in listed and "alpha__refresh" not in found
        assert sorted(listed) == [
            "alpha__plain",
            "alpha__refresh",
            "alpha__show",
            "other__ping_other",
        ]
        assert service_info(listed["alpha__show"]) == ServiceInfo(
            "alpha", "show", BackendType.USER_WORKER
        )
        assert tool_ui(listed["alpha__show"].meta) == "ui://app.html"
        assert offered == {"alpha": True, "other": False}
    with pytest.raises(ServerClosed):
        pool.list_tools()
