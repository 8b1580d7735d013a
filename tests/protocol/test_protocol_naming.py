"""Tool names: the spec's validity rule, full names, parsing back, and collisions."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from nativemcp.protocol import (
    BackendType,
    ServiceInfo,
    ToolNameError,
    full_tool_name,
    is_valid_tool_name,
    parse_tool_name,
    safe_server_name,
    tool_name_index,
    validate_tool_name,
)

NAME_CHARS = "abcXYZ019_.-"
names = st.text(alphabet=NAME_CHARS, min_size=1, max_size=20)


@pytest.mark.parametrize(
    "name", ["a", "list_content", "content-store", "v1.2", "A_B-c.d", "x" * 128]
)
def test_names_of_1_to_128_spec_characters_are_valid(name: str) -> None:
    assert is_valid_tool_name(name)
    assert validate_tool_name(name) == name


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("", "must not be empty"),
        ("x" * 129, "(129 characters) is too long; at most 128 characters"),
        ("has space", "' '"),
        ("slash/name", "'/'"),
        ("한국어", "only A-Z a-z 0-9 _ . - are allowed"),
        ("tab\t", "'\\t'"),
    ],
)
def test_invalid_names_raise_tool_name_error_saying_why(name: str, says: str) -> None:
    assert not is_valid_tool_name(name)
    with pytest.raises(ToolNameError) as caught:
        validate_tool_name(name)
    assert says in str(caught.value)


def test_a_non_string_name_is_invalid() -> None:
    assert not is_valid_tool_name(5)  # type: ignore[arg-type]
    with pytest.raises(ToolNameError, match="must be a str, got int"):
        validate_tool_name(5)  # type: ignore[arg-type]


def test_external_tools_are_server__tool_and_built_in_ones_builtin_server__tool() -> None:
    assert full_tool_name("github", "search", BackendType.EXTERNAL_MCP) == "github__search"
    assert full_tool_name("content-store", "list_content", BackendType.BUILTIN_WEB) == (
        "builtin_content-store__list_content"
    )
    assert full_tool_name("planning", "add_todo", BackendType.BUILTIN_NATIVE) == (
        "builtin_planning__add_todo"
    )


def test_full_names_parse_back_into_service_info() -> None:
    assert parse_tool_name("github__search") == ServiceInfo(
        "github", "search", BackendType.EXTERNAL_MCP
    )
    assert parse_tool_name("builtin_content-store__list_content") == ServiceInfo(
        "content-store", "list_content", BackendType.BUILTIN_WEB
    )
    assert parse_tool_name("builtin_planning__add_todo", native_servers={"planning"}) == (
        ServiceInfo("planning", "add_todo", BackendType.BUILTIN_NATIVE)
    )
    assert parse_tool_name("srv__tool__with__more") == ServiceInfo(
        "srv", "tool__with__more", BackendType.EXTERNAL_MCP
    )


@given(server=names, tool=names, backend=st.sampled_from(list(BackendType)))
def test_every_full_name_parses_back_to_what_it_was_built_from(
    server: str, tool: str, backend: BackendType
) -> None:
    try:
        name = full_tool_name(server, tool, backend)
    except ToolNameError:
        return
    in_process = (BackendType.BUILTIN_NATIVE, BackendType.USER_IN_PROCESS)
    native = {server} if backend in in_process else set()
    user = {server} if backend in (BackendType.USER_WORKER, BackendType.USER_IN_PROCESS) else set()
    parsed = parse_tool_name(name, native_servers=native, user_servers=user)
    assert parsed == ServiceInfo(server, tool, backend)


@given(a=st.tuples(names, names), b=st.tuples(names, names))
def test_different_external_tools_never_get_the_same_full_name(
    a: tuple[str, str], b: tuple[str, str]
) -> None:
    assume(a != b)
    try:
        first = full_tool_name(*a, BackendType.EXTERNAL_MCP)
        second = full_tool_name(*b, BackendType.EXTERNAL_MCP)
    except ToolNameError:
        return
    assert first != second


@pytest.mark.parametrize(
    ("server", "tool", "backend", "says"),
    [
        ("a__b", "t", BackendType.EXTERNAL_MCP, "must not contain '__'"),
        ("a_", "b", BackendType.EXTERNAL_MCP, "must not end with '_'"),
        ("builtin_x", "t", BackendType.EXTERNAL_MCP, "would read as a built-in"),
        ("builtin_x", "t", BackendType.USER_WORKER, "user server name 'builtin_x' must not"),
        ("builtin", "t", BackendType.EXTERNAL_MCP, "would read as a built-in"),
        ("srv", "bad name", BackendType.EXTERNAL_MCP, "tool name 'bad name'"),
        ("bad srv", "t", BackendType.BUILTIN_WEB, "server name 'bad srv'"),
        ("s" * 60, "t" * 60, BackendType.BUILTIN_WEB, "full tool name"),
    ],
)
def test_names_that_would_not_parse_back_raise_tool_name_error(
    server: str, tool: str, backend: BackendType, says: str
) -> None:
    with pytest.raises(ToolNameError) as caught:
        full_tool_name(server, tool, backend)
    assert says in str(caught.value)


@pytest.mark.parametrize("name", ["plain", "builtin_only", "__tool", "server__", "bad name__x", ""])
def test_names_without_a_server__tool_shape_do_not_parse(name: str) -> None:
    with pytest.raises(ToolNameError):
        parse_tool_name(name)


def test_the_index_maps_full_names_to_services() -> None:
    services = [
        ServiceInfo("github", "search", BackendType.EXTERNAL_MCP),
        ServiceInfo("content-store", "search", BackendType.BUILTIN_WEB),
    ]
    assert tool_name_index(services) == {
        "github__search": services[0],
        "builtin_content-store__search": services[1],
    }


def test_collisions_are_errors_listing_every_clash_never_first_one_wins() -> None:
    services = [
        ServiceInfo("planning", "add_todo", BackendType.BUILTIN_WEB),
        ServiceInfo("planning", "add_todo", BackendType.BUILTIN_NATIVE),
        ServiceInfo("github", "search", BackendType.EXTERNAL_MCP),
        ServiceInfo("github", "search", BackendType.EXTERNAL_MCP),
    ]
    with pytest.raises(ToolNameError) as caught:
        tool_name_index(services)
    message = str(caught.value)
    assert "2 tool name collision(s)" in message
    assert "builtin_planning__add_todo" in message and "BuiltInNative" in message
    assert "github__search" in message


def test_the_index_refuses_invalid_names() -> None:
    with pytest.raises(ToolNameError, match="must not end with '_'"):
        tool_name_index([ServiceInfo("a_", "b", BackendType.EXTERNAL_MCP)])


@pytest.mark.parametrize(
    "written", ["My Time", "github.com/acme/tool", "時間", "a__b", "time_", "builtin_x", "builtin"]
)
def test_any_server_name_gets_a_safe_stable_part_that_parses_back(written: str) -> None:
    safe = safe_server_name(written)
    assert safe != written and safe == safe_server_name(written)
    name = full_tool_name(safe, "tool", BackendType.EXTERNAL_MCP)
    assert parse_tool_name(name, servers=["other", written]) == ServiceInfo(
        written, "tool", BackendType.EXTERNAL_MCP
    )
    assert parse_tool_name(name).server_name == safe


def test_a_name_that_follows_the_rules_is_its_own_safe_part() -> None:
    assert safe_server_name("github") == "github"
    assert safe_server_name("content-store", BackendType.BUILTIN_WEB) == "content-store"
    assert safe_server_name("My Time").startswith("My_Time-")
    assert safe_server_name("github.com/acme/tool").startswith("github.com_acme_tool-")


@given(a=st.text(min_size=1, max_size=30), b=st.text(min_size=1, max_size=30))
def test_different_server_names_never_share_a_safe_part(a: str, b: str) -> None:
    assume(a != b)
    assert safe_server_name(a) != safe_server_name(b)
    full_tool_name(safe_server_name(a), "t", BackendType.EXTERNAL_MCP)
