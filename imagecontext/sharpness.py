"""Sharpness and noise, measured at the canonical size.

* ``sharpness``: variance of the Laplacian of luma, divided by the luma variance, so a
  low-contrast but sharp image is not called blurred (a blur lowers it);
* ``noise``: Immerkær's (1996) estimate of the standard deviation of white noise (luma
  in 0..255): the mean absolute response to the mask ``[[1,-2,1],[-2,4,-2],[1,-2,1]]``,
  which cancels smooth structure, times ``sqrt(pi/2) / 6``. Edges leak into it, so it
  compares images of similar content; added noise raises it.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> flat = np.full((256, 256, 3), 128, np.uint8)
>>> noisy = np.clip(128 + rng.normal(0, 10, (256, 256, 1)), 0, 255).astype(np.uint8).repeat(3, 2)
>>> round(noise_level(flat), 2), 8 < noise_level(noisy) < 12
(0.0, True)
"""
from __future__ import annotations

import math

import cv2
import numpy as np

from imagecontext.canonical import canonical_rgb, grey

__all__ = ["sharpness", "noise_level"]

_IMMERKAER = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], dtype=np.float32)


def sharpness(rgb: np.ndarray) -> float:
    """Contrast-normalised variance of the Laplacian of ``rgb`` (H, W, 3) uint8."""
    g = grey(canonical_rgb(rgb))
    var = float(g.var())
    if var < 1e-8:
        return 0.0
    return float(cv2.Laplacian(g, cv2.CV_32F, ksize=1).var() / var)


def noise_level(rgb: np.ndarray) -> float:
    """Immerkær's noise standard deviation of ``rgb`` (H, W, 3) uint8, luma 0..255."""
    g = grey(canonical_rgb(rgb)) * 255.0
    if min(g.shape) < 3:
        return 0.0
    response = cv2.filter2D(g, cv2.CV_32F, _IMMERKAER)[1:-1, 1:-1]
    return float(math.sqrt(math.pi / 2) * np.abs(response).mean() / 6.0)
