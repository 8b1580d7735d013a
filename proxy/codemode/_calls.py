"""One run's bookkeeping, shared by the async and the blocking sandbox.

`RunState` holds the names a program may call, counts its calls and its printed
bytes against the limits, turns a tool's response into the plain value the program
gets (`unwrap`'s priority: ``structuredResult`` → ``structuredContent`` → JSON in the
text → the text) or into an exception it can catch, and records each `InnerCall`.
`python_names` gives each full tool name the identifier a program calls it by.
"""

from __future__ import annotations

import contextlib
import keyword
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol

import msgspec

from nativemcp.protocol import (
    CodeLimitExceeded,
    NativeMCPResponse,
    Tool,
    ToolError,
    UnknownTool,
    quoted_name,
    result_text,
    unwrap,
)

from ..telemetry import TRACING
from ._limits import CodeLimits
from ._result import CodeResult, InnerCall

__all__ = [
    "Handlers",
    "RunState",
    "chosen_tools",
    "code_tools",
    "named_handlers",
    "named_log",
    "named_progress",
    "plain",
    "python_names",
    "run_span",
]

_NOT_IDENTIFIER: Final = re.compile(r"\W")


def python_names(full_names: Iterable[str]) -> dict[str, str]:
    """Identifier → full name: each full name with every character Python refuses in a
    name made ``_`` (``builtin_content-store__list`` → ``builtin_content_store__list``),
    a keyword or a leading digit prefixed with ``_``, and a second name that comes out
    the same numbered (``_2``), so every tool keeps a name of its own."""
    names: dict[str, str] = {}
    for full in sorted(full_names):
        base = _NOT_IDENTIFIER.sub("_", full)
        if not base or base[0].isdigit() or keyword.iskeyword(base):
            base = f"_{base}"
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}_{n}"
        names[name] = full
    return names


def named_progress(
    report: Callable[[float, float | None, str | None], Any], name: str
) -> Callable[[float, float | None, str | None], Any]:
    """``report`` for one inner call: its message led by ``name``, the identifier the
    program called (``shapes__count: step 2``; without a message, ``shapes__count:
    2/3``), so whoever follows a run's progress knows which call it is of."""

    def named(progress: float, total: float | None, message: str | None) -> Any:
        said = message or (f"{progress:g}/{total:g}" if total is not None else f"{progress:g}")
        return report(progress, total, f"{name}: {said}")

    return named


def named_log(
    log: Callable[[str, Any, str | None], Any], name: str
) -> Callable[[str, Any, str | None], Any]:
    """``log`` for one inner call: its logger named by ``name``, the identifier the
    program called (``shapes__count``; a tool's own logger after it,
    ``shapes__count: db``), so whoever reads a run's log knows which call it is of."""

    def named(level: str, data: Any, logger: str | None) -> Any:
        return log(level, data, name if logger is None else f"{name}: {logger}")

    return named


class Handlers(Protocol):
    """A call's handlers of what a tool tells while it runs (`CallOptions` has them)."""

    @property
    def on_progress(self) -> Callable[[float, float | None, str | None], Any] | None: ...
    @property
    def on_log(self) -> Callable[[str, Any, str | None], Any] | None: ...


def named_handlers(name: str, handlers: Handlers) -> dict[str, Any]:
    """The handlers of ``handlers`` for one inner call named ``name``, by keyword
    (``on_progress``, ``on_log``; `named_progress`, `named_log`): empty when there are
    none to name."""
    on_progress, on_log = handlers.on_progress, handlers.on_log
    named: dict[str, Any] = {}
    if on_progress is not None:
        named["on_progress"] = named_progress(on_progress, name)
    if on_log is not None:
        named["on_log"] = named_log(on_log, name)
    return named


def run_span(tools: Mapping[str, Tool]) -> contextlib.AbstractContextManager[Any]:
    """The ``run_code`` span, current while a run goes on (its inner calls' client spans
    are its children); nothing when the app records no spans."""
    tracer = TRACING.tracer
    if tracer is None:
        return contextlib.nullcontext()
    return tracer.start_as_current_span("run_code", attributes={"code.tools": len(tools)})


def code_tools(
    visible: Iterable[tuple[str, Tool]], offered: Callable[[str], bool] | None = None
) -> dict[str, Tool]:
    """Identifier → tool (named by its full name) for each ``(full name, tool)`` the
    model may see that ``offered`` allows.

    The identifiers are given over every visible tool, so a tool keeps its name
    whatever a profile or a caller leaves out.
    """
    tools = dict(visible)
    names = python_names(tools)
    return {
        name: msgspec.structs.replace(tools[full], name=full)
        for name, full in names.items()
        if offered is None or offered(full)
    }


def chosen_tools(tools: Mapping[str, Tool], names: Iterable[str]) -> dict[str, Tool]:
    """The tools of ``tools`` (identifier → tool) that ``names`` name, by identifier or
    by full name, in the order named.

    Raises:
        UnknownTool: a name that is not among them.
    """
    by_full = {tool.name: name for name, tool in tools.items()}
    chosen: dict[str, Tool] = {}
    for name in names:
        key = name if name in tools else by_full.get(name)
        if key is None:
            raise UnknownTool(
                f"no tool named {quoted_name(name)} is offered here; search_tools finds one"
            )
        chosen[key] = tools[key]
    return chosen


_SCALARS: Final = (bool, int, float, str)
_SEQUENCES: Final = (list, tuple, set, frozenset)


def plain(value: Any) -> Any:
    """A sandbox value as plain data: tuples and sets as lists, a class instance as its
    attributes, anything else that is not JSON data as its ``repr``."""
    # The types as tuples made once: `bool | int` builds a union object at every call,
    # and this runs on every item of a program's last value.
    if value is None or isinstance(value, _SCALARS):
        return value
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): plain(v) for k, v in value.items()}
    if isinstance(value, _SEQUENCES):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    attributes = getattr(value, "attributes", None)  # Monty's dataclass / class proxies
    if isinstance(attributes, dict):
        return plain(attributes)
    return repr(value)


class RunState:
    """One run's calls, printed output and the first limit it passed.

    Args:
        tools: identifier → the catalog's tool (under its full name).
        limits: the run's limits.
    """

    def __init__(self, tools: Mapping[str, Tool], limits: CodeLimits) -> None:
        self.tools = tools
        self.limits = limits
        self.started = time.perf_counter()
        self.calls: list[InnerCall] = []
        self.exceeded: CodeLimitExceeded | None = None
        self._started_calls = 0
        self._output: list[str] = []
        self._output_bytes = 0

    # -- printed output ----------------------------------------------------------------

    def on_print(self, stream: str, text: str) -> None:
        """Keep what the program printed; past the output limit, the part that fits
        (`exceeded` is set, the rest dropped: the run is to stop)."""
        if self.exceeded is not None:
            return
        data = text.encode("utf-8", "replace")
        room = self.limits.output - self._output_bytes
        if len(data) > room:
            # Monty hands over printed lines in batches: keep the part that fits.
            self._output.append(data[:room].decode("utf-8", "ignore"))
            self._output_bytes = self.limits.output
            self.exceeded = CodeLimitExceeded(
                "output", self.limits.output, "the program printed more than that many bytes"
            )
            return
        self._output_bytes += len(data)
        self._output.append(text)

    @property
    def output(self) -> str:
        """Everything printed so far."""
        return "".join(self._output)

    # -- inner calls -------------------------------------------------------------------

    def begin(self, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Check one call before it runs and give its arguments.

        Raises (into the program):
            TypeError: positional arguments (tools take keywords).
            RuntimeError: the call limit is passed (the run then stops with
                `CodeLimitExceeded`, whether or not the program catches it).
        """
        if self._started_calls >= self.limits.calls:
            if self.exceeded is None:
                self.exceeded = CodeLimitExceeded(
                    "calls", self.limits.calls, "the program made more tool calls than that"
                )
            raise RuntimeError(f"the run's limit of {self.limits.calls} tool calls is passed")
        if args:
            raise TypeError(f"{name}() takes keyword arguments only, as its stub shows")
        self._started_calls += 1
        # A parameter named like a keyword is written `from_` in the stub and the program.
        return {
            key[:-1] if key.endswith("_") and keyword.iskeyword(key[:-1]) else key: value
            for key, value in kwargs.items()
        }

    def finish(self, name: str, started: float, response: NativeMCPResponse[Any]) -> Any:
        """The value a finished call gives the program, recorded.

        Raises (into the program):
            RuntimeError: the tool answered an error; the message is its text.
        """
        tool = self.tools[name]
        try:
            value = unwrap(response, object, tool=tool.name, output_schema=tool.output_schema)
        except ToolError as exc:
            text = exc.text or result_text(response) or exc.message
            self._record(name, started, text)
            raise RuntimeError(f"{name}: {text}") from None
        self._record(name, started, None)
        # `to_builtins` gives JSON data already (dicts, lists, scalars): no second walk
        # in Python (`plain` took 20 µs on a three-item listing, a tenth of a call).
        return msgspec.to_builtins(value)

    def failed(self, name: str, started: float, exc: Exception) -> RuntimeError:
        """The exception a call that did not answer raises in the program, recorded."""
        self._record(name, started, str(exc) or type(exc).__name__)
        return RuntimeError(f"{name}: {exc}")

    def _record(self, name: str, started: float, error: str | None) -> None:
        duration = time.perf_counter() - started
        self.calls.append(
            InnerCall(name=name, tool=self.tools[name].name, duration=duration, error=error)
        )

    def result(self, value: Any = None) -> CodeResult:
        """The run as it stands: output, ``value`` as plain data, calls and duration."""
        return CodeResult(
            output=self.output,
            value=plain(value),
            calls=tuple(self.calls),
            duration=time.perf_counter() - self.started,
        )
