"""Tool results shaped as each provider's tool-result message.

| provider | shape |
| --- | --- |
| ``openai`` | Chat Completions ``{"role": "tool", "tool_call_id", "content": str}`` |
| ``openai-responses`` | ``{"type": "function_call_output", "call_id", "output": str}`` |
| ``anthropic`` | ``{"type": "tool_result", "tool_use_id", "content": [blocks], "is_error"}`` |
| ``gemini`` | a Part ``{"functionResponse": {"name", "id", "response": {...}}}`` |

Gemini's ``response`` is always an object. A JSON object result is the response
itself; anything else goes under ``"output"`` (the key Gemini's API documents for a
function's output), errors under ``"error"``, and notes about non-text blocks under
``"attachments"``. JSON is never encoded twice: text that is JSON reaches the string
providers as the tool wrote it and Gemini as the parsed value.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from nativemcp.protocol import ImageContent, NativeMCPResponse

from ._budget import check_budget
from ._fit import cut_output, to_keep
from ._kept import KeptResults
from ._provider import Provider, check_provider
from ._render import ToolOutput, render

__all__ = ["message_for", "tool_result_message", "tool_results_turn"]

logger = logging.getLogger("nativemcp.proxy.llm")

_ANTHROPIC_IMAGE_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_MIME_ALIASES: Final = {"image/jpg": "image/jpeg"}


def tool_result_message(
    response_or_error: NativeMCPResponse[Any] | Exception,
    *,
    provider: Provider,
    call_id: str,
    tool_name: str,
    budget: int | None = None,
    kept: KeptResults | None = None,
    owner: str = "",
) -> dict[str, Any]:
    """The message (or content block, or Part) that hands a tool result to ``provider``.

    Args:
        response_or_error: the call's response, or the exception the call raised (a
            `ToolError`, a worker timeout or crash, any other `Exception`).
        provider: ``"openai"``, ``"openai-responses"``, ``"anthropic"`` or ``"gemini"``.
        call_id: the id of the model's tool call this answers (Gemini: may be ``""``
            for models whose function calls carry no id).
        tool_name: the name of the tool the model called (Gemini matches on it).
        budget: the most tokens the result's text may take (at least `MIN_BUDGET`;
            None: no limit). A result over it is cut at a readable boundary (whole
            lines, whole JSON items, a JSON object summarised by shape) with one line
            saying what was left out and how to read it: the whole result is kept in
            ``kept`` under an id, for ``read_result`` (`READ_RESULT`, answered by
            `read_result`). An image over 1 MB or 1,568 pixels is scaled down (with
            Pillow, the ``images`` extra), the original kept the same way. A result
            within it is sent as it is, byte for byte.
        kept: where a result over ``budget`` is kept (None: `KeptResults.shared`).
        owner: whose result it is: only the same owner reads it back.

    Returns:
        A JSON-able dict in the provider's own wire shape, ready to append to the
        conversation (Anthropic: a content block for the next user message; Gemini: a
        Part for the next content).

    Raises:
        UnknownProviderError: ``provider`` is not one of `PROVIDERS`.
        TypeError: ``response_or_error`` is neither a response nor an `Exception`.
        ValueError: ``budget`` is not a whole number of at least `MIN_BUDGET` tokens.
    """
    provider = check_provider(provider)
    output = render(response_or_error)
    if budget is not None:
        budget = check_budget(budget)
        whole = to_keep(output, budget)
        if whole is not None:
            store = kept if kept is not None else KeptResults.shared()
            result = store.keep(
                whole.lines, owner=owner, tool=tool_name, unit=whole.unit, images=whole.images
            )
            output = cut_output(output, whole, budget, result.id)
    return message_for(output, provider, call_id, tool_name)


def message_for(
    output: ToolOutput, provider: Provider, call_id: str, tool_name: str
) -> dict[str, Any]:
    """``output`` as ``provider``'s tool-result message (``provider`` already checked)."""
    build = _BUILDERS[provider]
    logger.debug(
        "tool result for %s (call %s) as %s: %s, %d chars, %d non-text blocks",
        tool_name,
        call_id,
        provider,
        output.kind,
        len(output.body),
        len(output.extras),
    )
    return build(output, call_id, tool_name)


def tool_results_turn(results: list[dict[str, Any]], *, provider: Provider) -> list[dict[str, Any]]:
    """The history entries that hand one model turn's tool results back.

    ``results`` come from `tool_result_message`, in the order of the calls; append the
    entries as they are.

    OpenAI wants one ``tool`` message per result and Responses one ``function_call_output``
    item per result: the results themselves. Anthropic wants every ``tool_result`` block
    of a turn in the one user message that follows it, and Gemini every
    ``functionResponse`` Part in one user content: one entry holding them all (none for
    no results).

    Raises:
        UnknownProviderError: ``provider`` is not one of `PROVIDERS`.
    """
    provider = check_provider(provider)
    if provider in ("openai", "openai-responses") or not results:
        return list(results)
    if provider == "anthropic":
        return [{"role": "user", "content": list(results)}]
    return [{"role": "user", "parts": list(results)}]


def _openai(output: ToolOutput, call_id: str, tool_name: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": output.text}


def _openai_responses(output: ToolOutput, call_id: str, tool_name: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output.text}


def _anthropic(output: ToolOutput, call_id: str, tool_name: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if output.body:
        content.append({"type": "text", "text": output.body})
    for extra in output.extras:
        image = _anthropic_image(extra.image) if extra.image is not None else None
        if image is None or extra.with_image:
            content.append({"type": "text", "text": extra.note})
        if image is not None:
            content.append(image)
    return {
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": content,
        "is_error": output.kind == "error",
    }


def _anthropic_image(image: ImageContent) -> dict[str, Any] | None:
    mime = image.mime_type.split(";")[0].strip().lower()
    mime = _MIME_ALIASES.get(mime, mime)
    if mime not in _ANTHROPIC_IMAGE_TYPES or not image.data:
        return None
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": image.data}}


def _gemini(output: ToolOutput, call_id: str, tool_name: str) -> dict[str, Any]:
    response: dict[str, Any]
    if output.kind == "error":
        response = {"error": output.value}
    elif output.kind == "json" and isinstance(output.value, dict) and not output.extras:
        response = output.value
    else:
        response = {}
        if output.kind == "json":
            response["output"] = output.value
        elif output.body:
            response["output"] = output.body
        if output.extras:
            response["attachments"] = [extra.note for extra in output.extras]
    function_response: dict[str, Any] = {"name": tool_name, "response": response}
    if call_id:
        function_response["id"] = call_id
    return {"functionResponse": function_response}


_BUILDERS: Final[dict[Provider, Callable[[ToolOutput, str, str], dict[str, Any]]]] = {
    "openai": _openai,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
}
