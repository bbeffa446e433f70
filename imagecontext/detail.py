"""A 1:1 crop of the image's native pixels, for the contexts that live in fine detail.

Compression (the 8x8 JPEG grid, ringing), noise and sharpness are read on native pixels
(:mod:`imagecontext.compression`, :mod:`imagecontext.sharpness`); a thumbnail shrinks exactly
what they measure away. :func:`detail_crop` keeps a :data:`DETAIL_SIDE` px square of the native
pixels: the most textured one (mean absolute Laplacian of the luma: edges and texture are where
blocking, ringing, blur and noise show), searched on the JPEG grid (origins multiples of 8, so the
crop's blocks are the file's blocks) inside the central 1024 px, as the compression forensics read
it. :data:`DETAIL_COLUMNS` are the columns such a crop illustrates.

>>> import numpy as np
>>> rgb = np.zeros((200, 300, 3), np.uint8); rgb[120:180, 200:260] = 255  # one bright square
>>> crop = detail_crop(rgb)
>>> crop.shape, bool(crop.max() == 255 and crop.min() == 0)
((64, 64, 3), True)
>>> detail_crop(np.zeros((40, 50, 3), np.uint8)).shape  # smaller than a crop: the whole image
(40, 50, 3)
"""
from __future__ import annotations

import cv2
import numpy as np

__all__ = ["DETAIL_SIDE", "DETAIL_COLUMNS", "detail_crop"]

DETAIL_SIDE = 64  # 8 JPEG blocks across; a lossless PNG of it is about 10 KB
# the columns measured on native pixels, whose values a 1:1 crop shows
DETAIL_COLUMNS = ("img_jpeg_quality", "img_jpeg_coarseness", "img_jpeg_standard_tables", "img_jpeg_double",
                  "img_blockiness", "img_sharpness", "img_noise")
_SEARCH = 1024  # the central region searched, px (as the compression forensics read it)
_GRID = 8


def detail_crop(rgb: np.ndarray, side: int = DETAIL_SIDE) -> np.ndarray:
    """The most textured ``side`` x ``side`` block of ``rgb`` (H, W, 3) uint8 at native pixels,
    its origin on the 8 px grid; the whole image when it is smaller. Shape (min(side, H), min(side, W), 3)."""
    h, w = rgb.shape[:2]
    ch, cw = min(side, h), min(side, w)
    if (ch, cw) == (h, w):
        return np.ascontiguousarray(rgb)
    # the central region searched, its origin on the grid
    y0 = max(0, (h - _SEARCH) // 2) // _GRID * _GRID
    x0 = max(0, (w - _SEARCH) // 2) // _GRID * _GRID
    region = np.ascontiguousarray(rgb[y0:y0 + _SEARCH, x0:x0 + _SEARCH])
    luma = cv2.cvtColor(region, cv2.COLOR_RGB2GRAY)
    texture = np.abs(cv2.Laplacian(luma, cv2.CV_32F))
    total = cv2.integral(texture)  # (rh + 1, rw + 1) float64: any block's sum in four reads
    rh, rw = luma.shape
    ys = np.arange(0, rh - ch + 1, _GRID)
    xs = np.arange(0, rw - cw + 1, _GRID)
    sums = (total[ys[:, None] + ch, xs[None, :] + cw] - total[ys[:, None], xs[None, :] + cw]
            - total[ys[:, None] + ch, xs[None, :]] + total[ys[:, None], xs[None, :]])
    iy, ix = np.unravel_index(int(np.argmax(sums)), sums.shape)
    top, left = y0 + int(ys[iy]), x0 + int(xs[ix])
    return np.ascontiguousarray(rgb[top:top + ch, left:left + cw])
