"""Real images from installed packages (skimage.data, sklearn) and encoders for tests."""
from __future__ import annotations

import io

import numpy as np
import skimage.data
from PIL import Image


def encode(rgb: np.ndarray, fmt: str = "PNG", **options) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb)).save(buf, fmt, **options)
    return buf.getvalue()


def photos() -> dict[str, np.ndarray]:
    """Colour photos: astronaut (a face), chelsea (a cat), coffee (no face)."""
    return {"astronaut": skimage.data.astronaut(), "chelsea": skimage.data.chelsea(),
            "coffee": skimage.data.coffee()}


def lfw_upscaled() -> tuple[np.ndarray, np.ndarray]:
    """LFW crops ×4 (100×100 RGB uint8): (faces, non_faces), 100 each."""
    crops = (np.clip(skimage.data.lfw_subset(), 0, 1) * 255).astype(np.uint8)
    big = crops.repeat(4, axis=1).repeat(4, axis=2)
    rgb = np.repeat(big[..., None], 3, axis=3)
    return rgb[:100], rgb[100:]
