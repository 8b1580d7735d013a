"""The caller's check that a call can be sent: a tool name and arguments the wire carries.

A worker reads each call as msgpack with string keys. Whatever would not survive that
trip (a non-string key, a lone surrogate, an int over 64 bits, an object msgpack has
no form for, nesting deeper than the encoder's recursion limit) is refused here, before
anything is sent, as an `ArgumentsError` naming the argument and the problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from nativemcp.protocol import ArgumentsError

__all__ = ["check_arguments", "check_tool_name"]

_encoder: Final = msgspec.msgpack.Encoder()


def check_tool_name(tool: object) -> str:
    """``tool`` itself when it is a string.

    Raises:
        ArgumentsError: the tool name is not a string.
    """
    if not isinstance(tool, str):
        raise ArgumentsError(f"a tool name must be a string, got {type(tool).__name__}: {tool!r}")
    return tool


def check_arguments(tool: str, arguments: Mapping[Any, Any]) -> None:
    """Check that ``arguments`` can be sent to a worker as they are.

    Raises:
        ArgumentsError: a key is not a string, or a value cannot be encoded (the
            message names the argument and why).
    """
    for key in arguments:
        if type(key) is not str:
            raise ArgumentsError(
                f"arguments for {tool!r} must have string keys, got "
                f"{type(key).__name__} key {key!r}"
            )
    try:
        _encoder.encode(arguments)
    except (TypeError, ValueError, OverflowError, RecursionError, msgspec.EncodeError):
        pass
    else:
        return
    # Slow path, for the message only: find the argument that fails.
    for key, value in arguments.items():
        problem = _problem(value)
        if problem is not None:
            raise ArgumentsError(f"argument {key!r} of {tool!r} cannot be sent: {problem}")
    raise ArgumentsError(f"arguments for {tool!r} cannot be sent")  # pragma: no cover


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
