"""Images over a size cap, scaled down for the model (the original kept for the app).

A tool's screenshot or photo is often megabytes; a provider refuses an image over 5 MB
(Anthropic) and scales anything past about 1,568 pixels on its long edge down on its
side anyway, at the same token cost. Under a result budget an image whose decoded size
is over `IMAGE_BYTES`, or whose long edge is over `IMAGE_EDGE` pixels, reaches the model
scaled to that edge (PNG stays PNG unless JPEG is needed to get under the cap,
anything else becomes JPEG) with a note saying
so; the original is kept with the result and read back with ``read_result(id,
image=N)``.

Scaling needs Pillow (the ``images`` extra). Without it an image is sent as it is, as
before budgets. An image Pillow cannot read is sent as it is too.
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import TYPE_CHECKING, Final

from nativemcp.protocol import ImageContent

if TYPE_CHECKING:
    from PIL.Image import Image

from ._budget import RESULTS_URI, human_size

__all__ = ["IMAGE_BYTES", "IMAGE_EDGE", "Scaled", "oversize", "scale_down"]

IMAGE_BYTES: Final = 1024 * 1024
"""The largest image (decoded) a budgeted result hands a model as it is: 1 MB."""
IMAGE_EDGE: Final = 1568
"""The longest edge in pixels of an image scaled for a model (Anthropic's advice)."""
_JPEG_QUALITY: Final = 85


def _decoded_size(image: ImageContent) -> int:
    return len(image.data) * 3 // 4


def oversize(image: ImageContent) -> bool:
    """Whether ``image`` is to be scaled down: over `IMAGE_BYTES` or with a long edge
    over `IMAGE_EDGE`, and readable by Pillow (without it nothing is scaled, so nothing
    is over: the image is sent as it is)."""
    opened = _open(image)
    if opened is None:
        return False
    return _decoded_size(image) > IMAGE_BYTES or max(opened.size) > IMAGE_EDGE


def _open(image: ImageContent) -> Image | None:
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        return None
    try:
        raw = base64.b64decode(image.data, validate=False)
        # Reads the header only: the pixels are decoded when scaled.
        return Image.open(io.BytesIO(raw))
    except (binascii.Error, UnidentifiedImageError, OSError, ValueError):
        return None


class Scaled:
    """An image scaled down: the smaller copy and the note that says what was done."""

    def __init__(self, image: ImageContent, note: str) -> None:
        self.image = image
        self.note = note


def scale_down(image: ImageContent, number: int, result_id: str) -> Scaled | None:
    """``image`` scaled to `IMAGE_EDGE` on its long edge, with the note that names the
    original (image ``number`` of result ``result_id``); None without Pillow or for an
    image it cannot read."""
    opened = _open(image)
    if opened is None:
        return None
    try:
        width, height = opened.size
        opened.thumbnail((IMAGE_EDGE, IMAGE_EDGE))
        png = opened.format == "PNG"
        out = io.BytesIO()
        if png:
            opened.save(out, format="PNG", optimize=True)
        if not png or out.tell() > IMAGE_BYTES:  # a photo-like PNG is smaller as JPEG
            png, out = False, io.BytesIO()
            opened.convert("RGB").save(out, format="JPEG", quality=_JPEG_QUALITY)
    except (OSError, ValueError):
        return None
    data = out.getvalue()
    mime = "image/png" if png else "image/jpeg"
    smaller = ImageContent(data=base64.b64encode(data).decode(), mime_type=mime)
    note = (
        f"[image {number} scaled down for the model: {image.mime_type}, "
        f"{human_size(_decoded_size(image))}, {width}x{height} -> {mime}, "
        f"{human_size(len(data))}, {opened.size[0]}x{opened.size[1]}. The original is "
        f"kept with {RESULTS_URI}{result_id}: read_result(id={result_id!r}, image={number})]"
    )
    return Scaled(smaller, note)
