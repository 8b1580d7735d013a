"""The caller's check that a call can be sent: a tool name and arguments the wire carries.

A worker reads each call as msgpack with string keys. Whatever would not survive that
trip (a non-string key at any depth, a lone surrogate in a value or in the tool's name,
an int over 64 bits, an object msgpack has no form for, nesting deeper than the
encoder's recursion limit) is refused here, before anything is sent, as an
`ArgumentsError` naming the argument and the problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from nativemcp.protocol import ArgumentsError, quoted_name

__all__ = ["check_arguments", "check_tool_name"]

_encoder: Final = msgspec.msgpack.Encoder()
_ALWAYS_SENT: Final = frozenset({bool, float, type(None)})
"""Value types every instance of which msgpack carries (a str can hold a lone surrogate,
an int can be too big)."""
_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**64 - 1


def check_tool_name(tool: object) -> str:
    """``tool`` itself when it is a string that can be sent (UTF-8 text).

    Raises:
        ArgumentsError: the tool name is not a string, or holds a lone surrogate.
    """
    if not isinstance(tool, str):
        raise ArgumentsError(
            f"a tool name must be a string, got {type(tool).__name__}: {repr(tool)[:80]}"
        )
    if not tool.isascii():
        try:
            tool.encode()
        except UnicodeEncodeError as exc:
            raise ArgumentsError(
                f"tool name {quoted_name(tool)} holds a lone surrogate "
                f"({exc.object[exc.start : exc.end]!r}); it cannot be sent"
            ) from None
    return tool


def check_arguments(tool: str, arguments: Mapping[Any, Any]) -> None:
    """Check that ``arguments`` can be sent to a worker as they are.

    Raises:
        ArgumentsError: a key is not a string, or a value cannot be encoded (the
            message names the argument and why).
    """
    plain = True  # every key and value is one msgpack always carries (checked cheaply)
    for key, value in arguments.items():
        if type(key) is not str:
            raise ArgumentsError(
                f"arguments for {quoted_name(tool)} must have string keys, got "
                f"{type(key).__name__} key {key!r}"
            )
        if plain:
            kind = type(value)
            plain = key.isascii() and (
                kind in _ALWAYS_SENT
                or (kind is int and _INT_MIN <= value <= _INT_MAX)
                or (kind is str and value.isascii())
            )
    if plain:
        return  # the usual call (a few numbers, flags and names): no trial encoding
    try:
        _encoder.encode(arguments)
    except (TypeError, ValueError, OverflowError, RecursionError, msgspec.EncodeError):
        pass
    else:
        # msgpack carries any key, but the worker (and JSON) reads string keys only.
        for key, value in arguments.items():
            if isinstance(value, dict | list | tuple):
                nested = _non_string_key(value)
                if nested is not None:
                    raise ArgumentsError(
                        f"argument {key!r} of {quoted_name(tool)} cannot be sent: it holds a "
                        f"mapping with the {type(nested).__name__} key {nested!r}; keys must "
                        "be strings"
                    )
        return
    # Slow path, for the message only: find the argument that fails.
    for key, value in arguments.items():
        problem = _problem(value)
        if problem is not None:
            raise ArgumentsError(
                f"argument {key!r} of {quoted_name(tool)} cannot be sent: {problem}"
            )
    raise ArgumentsError(f"arguments for {quoted_name(tool)} cannot be sent")  # pragma: no cover


def _non_string_key(value: dict[Any, Any] | list[Any] | tuple[Any, ...]) -> object | None:
    """The first key at any depth of ``value`` that is not a string; None when all are.

    Called only on values that encoded, so the nesting is within the encoder's limit.
    """
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            mapping: dict[object, Any] = node
            for key in mapping:
                if type(key) is not str:
                    return key
            stack.extend(item for item in mapping.values() if isinstance(item, dict | list | tuple))
        else:
            stack.extend(item for item in node if isinstance(item, dict | list | tuple))
    return None


def _problem(value: Any) -> str | None:
    """Why ``value`` cannot be encoded, in words; None when it can."""
    try:
        _encoder.encode(value)
    except RecursionError:
        return "it is nested too deeply"
    except UnicodeEncodeError as exc:
        return f"a string holds a lone surrogate ({exc.object[exc.start : exc.end]!r})"
    except OverflowError:
        return "an integer does not fit in 64 bits (-2**63 .. 2**64-1); send it as a string"
    except (TypeError, ValueError, msgspec.EncodeError) as exc:
        return str(exc)
    return None
