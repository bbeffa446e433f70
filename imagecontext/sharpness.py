"""Sharpness and noise, measured on NATIVE pixels (luma; images over
:data:`NATIVE_CAP` px on their longest side are first area-averaged to it).

* ``sharpness``: variance of the Laplacian of luma, divided by the luma variance, so a
  low-contrast but sharp image is not called blurred (a blur lowers it);
* ``noise``: Immerkær's (1996) estimate of the standard deviation of white noise (luma
  in 0..255): the mean absolute response to the mask ``[[1,-2,1],[-2,4,-2],[1,-2,1]]``,
  which cancels smooth structure, times ``sqrt(pi/2) / 6``. Edges leak into it, so it
  compares images of similar content; added noise raises it.

Both were read on the 256 px copy before; there a x0.5 resize of a 512 px photo moved the
noise as much as adding sigma = 5 noise, and a x0.25 resize read like a blur of sigma = 2 (the
small image was enlarged). Per native pixel, a downscale lowers the noise (it averages it) and
raises the sharpness (edges are denser): the opposite of added noise and of blur.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> flat = np.full((256, 256), 128, np.uint8)
>>> noisy = np.clip(128 + rng.normal(0, 10, (256, 256)), 0, 255).astype(np.uint8)
>>> round(noise_level(flat), 2), 8 < noise_level(noisy) < 12
(0.0, True)
"""
from __future__ import annotations

import math

import cv2
import numpy as np

__all__ = ["NATIVE_CAP", "sharpness", "noise_level"]

NATIVE_CAP = 1024  # the cost grows with the area; above this, native detail is averaged anyway
_IMMERKAER = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], dtype=np.float32)


def _luma(image: np.ndarray) -> np.ndarray:
    """Luma uint8, at most NATIVE_CAP px: from (H, W) luma or (H, W, 3) RGB uint8."""
    g = cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2GRAY) if image.ndim == 3 else image
    h, w = g.shape
    scale = NATIVE_CAP / max(h, w)
    if scale < 1:
        g = cv2.resize(np.ascontiguousarray(g), (max(1, round(w * scale)), max(1, round(h * scale))),
                       interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(g)


def sharpness(image: np.ndarray) -> float:
    """Contrast-normalised variance of the Laplacian of ``image`` (luma or RGB uint8)."""
    # integer filtering and OpenCV's moments: the ratio does not depend on the grey scale
    g = _luma(image)
    var = float(cv2.meanStdDev(g)[1][0, 0]) ** 2
    if var < 1e-6:
        return 0.0
    return float(cv2.meanStdDev(cv2.Laplacian(g, cv2.CV_16S, ksize=1))[1][0, 0] ** 2 / var)


def noise_level(image: np.ndarray) -> float:
    """Immerkær's noise standard deviation of ``image`` (luma or RGB uint8), luma 0..255."""
    g = _luma(image)
    if min(g.shape) < 3:
        return 0.0
    response = cv2.filter2D(g, cv2.CV_16S, _IMMERKAER)[1:-1, 1:-1]  # |response| <= 16 * 255
    total = float(cv2.norm(response, cv2.NORM_L1))
    return float(math.sqrt(math.pi / 2) * total / response.size / 6.0)
