"""The canonical working size: measurements that depend on resolution are taken here.

Sharpness and noise change with resolution (downscaling averages noise away and
sharpens edges), so every pixel statistic is measured after resizing the image so that
its longest side is :data:`CANONICAL_SIDE` pixels (area averaging when shrinking,
bilinear when enlarging).

>>> import numpy as np
>>> canonical_rgb(np.zeros((100, 50, 3), np.uint8)).shape
(256, 128, 3)
"""
from __future__ import annotations

import cv2
import numpy as np

__all__ = ["CANONICAL_SIDE", "canonical_rgb", "lab", "grey"]

CANONICAL_SIDE = 256


def canonical_rgb(rgb: np.ndarray, side: int = CANONICAL_SIDE) -> np.ndarray:
    """``rgb`` (H, W, 3) uint8 resized so its longest side is ``side``; shape (h, w, 3)."""
    h, w = rgb.shape[:2]
    scale = side / max(h, w)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    if size == (w, h):
        return np.ascontiguousarray(rgb)
    interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    return cv2.resize(np.ascontiguousarray(rgb), size, interpolation=interp)


def lab(rgb: np.ndarray) -> np.ndarray:
    """CIELAB (D65) of ``rgb`` uint8: float32 (H, W, 3), L* in 0..100, a*/b* about -128..127."""
    return cv2.cvtColor(rgb.astype(np.float32) / 255.0, cv2.COLOR_RGB2Lab)


def grey(rgb: np.ndarray) -> np.ndarray:
    """Luma of ``rgb`` uint8 as float32 in 0..1, shape (H, W)."""
    return cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).astype(np.float32) / 255.0
