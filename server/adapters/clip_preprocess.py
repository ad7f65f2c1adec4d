"""open_clip's image preprocessing for evaluation, with PIL and numpy: what the image tower of
an exported CLIP model expects (`clip_onnx`).

It imports only numpy, PIL and the standard library, so that `tools/export_clip.py` can load it
in the export venv and check it against open_clip's own transform on the same images.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from PIL import Image

Pixels = npt.NDArray[np.uint8]  # RGB, height x width x 3 (the media ports' type)
SHORTEST = "shortest-side bicubic + centre crop"
SQUASH = "squash"
# An image longer than this many times its short side has its long side cut to that, centred,
# before the resize: open_clip would resize a 4 x 50,000 strip to 224 x 2,800,000 pixels (1.9 GB)
# only to keep its middle 224. The centre crop sees the same middle, from a resize whose scale
# differs by the rounding of one side's length.
MAX_ASPECT = 16


def resized(image: Pixels, size: int, resize: str) -> Pixels:
    """The image as open_clip's eval transform gives it to the tower, before scaling: "squash"
    resizes to size x size; the default resizes the short side to `size` (torchvision's
    `Resize(size)`: the long side to int(size * long / short)) with PIL's bicubic filter, then
    cuts the centre (torchvision's `CenterCrop`: offsets rounded half to even)."""
    h, w = image.shape[:2]
    pil = Image.fromarray(np.ascontiguousarray(image), "RGB")
    if resize == SQUASH:
        new_w, new_h = size, size
    else:
        short, long = min(h, w), max(h, w)
        if long > MAX_ASPECT * short:
            long = MAX_ASPECT * short
            cut = ((w - long) // 2, 0) if w > h else (0, (h - long) // 2)
            pil = pil.crop((cut[0], cut[1], cut[0] + min(w, long), cut[1] + min(h, long)))
            w, h = pil.size
        new_long = int(size * long / short)
        new_w, new_h = (size, new_long) if w <= h else (new_long, size)
    if (new_w, new_h) != (w, h):
        pil = pil.resize((new_w, new_h), Image.Resampling.BICUBIC)
    if resize != SQUASH:
        top = round((new_h - size) / 2.0)
        left = round((new_w - size) / 2.0)
        pil = pil.crop((left, top, left + size, top + size))
    return np.asarray(pil, dtype=np.uint8)


def normalised(
    images: Sequence[Pixels], mean: Sequence[float], std: Sequence[float]
) -> npt.NDArray[np.float32]:
    """A batch of resized images as the tower's input: [b, 3, h, w], x / 255, minus the mean,
    over the std, per channel, in float32 (torchvision's ToTensor and Normalize)."""
    x = np.stack(images).astype(np.float32) / np.float32(255.0)
    x -= np.asarray(mean, np.float32)
    x /= np.asarray(std, np.float32)
    out: npt.NDArray[np.float32] = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    return out
