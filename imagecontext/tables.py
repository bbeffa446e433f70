"""The IJG (libjpeg) quantisation tables: the standard luminance table (ITU-T T.81 Annex K)
scaled to a quality as libjpeg and Pillow scale it, and the zig-zag scan order.

>>> ijg_luminance_table(50)[:4].tolist()
[16, 11, 10, 16]
"""
from __future__ import annotations

import numpy as np

__all__ = ["ijg_luminance_table", "IJG_LUMINANCE", "ZIGZAG"]

# The IJG standard luminance table (ITU-T T.81 Annex K), in natural row order.
IJG_LUMINANCE = np.array([
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55,
    14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
    18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
], dtype=np.int64)
# Zig-zag scan order: position k of a zig-zag table holds natural index ZIGZAG[k].
ZIGZAG = np.array([
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27,
    20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
    58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63])


def ijg_luminance_table(quality: int) -> np.ndarray:
    """The IJG luminance table scaled to ``quality`` (1..100), natural order, shape (64,)."""
    if not 1 <= int(quality) <= 100:
        raise ValueError(f"quality must be in 1..100, got {quality!r}")
    q = int(quality)
    scale = 5000 // q if q < 50 else 200 - 2 * q
    return np.clip((IJG_LUMINANCE * scale + 50) // 100, 1, 255)
