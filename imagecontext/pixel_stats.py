"""Exposure, contrast and colour of the image, measured at the canonical size.

* ``brightness``: mean L* (CIELAB lightness, 0 black .. 100 white);
* ``contrast``: RMS contrast, the standard deviation of luma in 0..1;
* ``dark_share`` / ``saturated_share``: share of pixels with L* < 10 / with some channel
  clipped at >= 250 (under- and over-exposure);
* ``cast_a`` / ``cast_b``: mean a* (green - / red +) and b* (blue - / yellow +): a colour
  cast moves them away from 0;
* ``saturation``: mean HSV saturation in 0..1.

>>> import numpy as np
>>> s = pixel_stats(np.full((8, 8, 3), 128, np.uint8))
>>> round(s.brightness, 1), s.contrast, abs(s.cast_a) < 1e-3
(53.6, 0.0, True)
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from imagecontext.canonical import canonical_rgb, grey, lab

__all__ = ["PixelStats", "pixel_stats"]


@dataclass(frozen=True)
class PixelStats:
    """Exposure and colour statistics (see the module docstring for each field)."""

    brightness: float
    contrast: float
    dark_share: float
    saturated_share: float
    cast_a: float
    cast_b: float
    saturation: float


def pixel_stats(rgb: np.ndarray) -> PixelStats:
    """Statistics of ``rgb`` (H, W, 3) uint8, measured at the canonical size."""
    small = canonical_rgb(rgb)
    lab_px = lab(small)
    hsv = cv2.cvtColor(small, cv2.COLOR_RGB2HSV)
    return PixelStats(
        brightness=float(lab_px[..., 0].mean()),
        contrast=float(grey(small).std()),
        dark_share=float((lab_px[..., 0] < 10).mean()),
        saturated_share=float((small >= 250).any(axis=2).mean()),
        cast_a=float(lab_px[..., 1].mean()),
        cast_b=float(lab_px[..., 2].mean()),
        saturation=float(hsv[..., 1].mean() / 255.0),
    )
