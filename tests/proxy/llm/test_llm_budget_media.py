"""Images and binary content under a result budget.

An image over its cap reaches the model scaled down (Pillow, the ``images`` extra),
the original kept and read back whole; a small image is untouched; without Pillow an
image is sent as it is; audio and binary resources are named with their type and size,
never inlined.
"""

from __future__ import annotations

import base64
import io
import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image

import nativemcp.protocol as mcp
from nativemcp.protocol import ImageContent, NativeMCPResponse, TextContent
from nativemcp.proxy.llm import KeptResults, count_tokens, read_result, tool_result_message
from nativemcp.proxy.llm._images import IMAGE_BYTES, IMAGE_EDGE


def _png(width: int, height: int, *, noisy: bool = False) -> str:
    image = Image.new("RGB", (width, height), (30, 120, 200))
    if noisy:  # a photo-like image PNG cannot compress
        image = Image.frombytes(
            "RGB", (width, height), bytes(range(256)) * (width * height * 3 // 256 + 1)
        )
    out = io.BytesIO()
    image.save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def _response(*blocks: Any) -> NativeMCPResponse[Any]:
    return NativeMCPResponse(result=mcp.CallToolResult(content=list(blocks)))


def _message(response: NativeMCPResponse[Any], kept: KeptResults) -> dict[str, Any]:
    return tool_result_message(
        response, provider="anthropic", call_id="c", tool_name="shot", budget=1000, kept=kept
    )


def _size(data: str) -> tuple[int, int]:
    return Image.open(io.BytesIO(base64.b64decode(data))).size


@pytest.mark.parametrize("noisy", [False, True])
def test_an_image_over_its_cap_reaches_the_model_scaled_and_the_original_is_kept(
    noisy: bool,
) -> None:
    original = _png(2000, 1600, noisy=noisy)
    kept = KeptResults()
    message = _message(
        _response(TextContent(text="the page"), ImageContent(data=original, mime_type="image/png")),
        kept,
    )
    text, note_block, image = (block for block in message["content"])
    assert image["type"] == "image"
    data = image["source"]["data"]
    assert max(_size(data)) == IMAGE_EDGE and len(base64.b64decode(data)) <= IMAGE_BYTES
    assert image["source"]["media_type"] == ("image/jpeg" if noisy else "image/png")
    # The note before it says what was done and how to get the original.
    note = note_block["text"]
    assert "image 1 scaled down for the model: image/png" in note and "2000x1600" in note
    assert count_tokens(f"{text['text']}\n{note}") <= 1000
    result_id = note.split("read_result(id='")[1].split("'")[0]
    back = read_result({"id": result_id, "image": 1}, budget=1000, kept=kept)
    assert back.result is not None
    (header, whole) = back.result.content
    assert isinstance(whole, ImageContent) and whole.data == original
    assert isinstance(header, TextContent) and "the original" in header.text
    with pytest.raises(Exception, match="has 1 image"):
        read_result({"id": result_id, "image": 2}, budget=1000, kept=kept)


def test_a_small_image_is_sent_as_it_is_and_nothing_is_kept() -> None:
    small = ImageContent(data=_png(64, 64), mime_type="image/png")
    kept = KeptResults()
    plain = tool_result_message(
        _response(TextContent(text="icon"), small),
        provider="anthropic",
        call_id="c",
        tool_name="shot",
    )
    assert _message(_response(TextContent(text="icon"), small), kept) == plain
    assert len(kept) == 0


@pytest.fixture
def without_pillow() -> Iterator[None]:
    saved = {name: module for name, module in sys.modules.items() if name.startswith("PIL")}
    for name in saved:
        del sys.modules[name]
    sys.modules["PIL"] = None  # type: ignore[assignment]
    yield
    del sys.modules["PIL"]
    sys.modules.update(saved)


@pytest.mark.usefixtures("without_pillow")
def test_without_pillow_a_large_image_is_sent_as_it_is_and_nothing_is_kept() -> None:
    big = ImageContent(data="A" * (IMAGE_BYTES * 2), mime_type="image/png")
    kept = KeptResults()
    message = _message(_response(TextContent(text="shot"), big), kept)
    assert message["content"][1]["source"]["data"] == big.data
    assert len(kept) == 0


def test_audio_and_binary_resources_are_named_with_type_and_size_never_inlined() -> None:
    blob = base64.b64encode(b"\x00\x01" * 300_000).decode()
    response = _response(
        TextContent(text="two attachments"),
        mcp.AudioContent(data=blob, mime_type="audio/wav"),
        mcp.EmbeddedResource(
            resource=mcp.ResourceContents(
                uri="file:///data.bin", mime_type="application/zip", blob=blob
            )
        ),
    )
    for provider in ("openai", "openai-responses", "anthropic", "gemini"):
        message = tool_result_message(
            response, provider=provider, call_id="c", tool_name="t", budget=500, kept=KeptResults()
        )
        dumped = json.dumps(message)
        assert blob[:100] not in dumped
        assert "audio/wav, 585.9 KB" in dumped and "application/zip, 585.9 KB" in dumped
