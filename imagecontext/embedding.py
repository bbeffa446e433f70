"""A fixed appearance embedding: colour histogram, edge layout and a coarse thumbnail.

The vector concatenates (all deterministic; the projection is seeded):

* an HSV colour histogram, 8 hue x 3 saturation x 3 value bins (72), L1-normalised;
* HOG of a 64x64 grey thumbnail: 9 orientations, 16x16 cells, one cell per block (144);
* a Gaussian random projection (seed :data:`PROJECTION_SEED`) of the standardised 32x32
  grey thumbnail to 32 dimensions.

It is sensitive to APPEARANCE (lighting, colour, device, compression, framing), not to
semantics: two photos of the same person under different light are far apart. Use it to
find appearance shift between benchmark and production, not to compare content.

>>> import numpy as np
>>> v = appearance_embedding(np.zeros((40, 30, 3), np.uint8))
>>> v.shape, v.dtype, EMBEDDING_DIM
((248,), dtype('float32'), 248)
"""
from __future__ import annotations

import cv2
import numpy as np
from skimage.feature import hog

__all__ = ["EMBEDDING_DIM", "PROJECTION_SEED", "appearance_embedding"]

PROJECTION_SEED = 20240601
_HIST_BINS = (8, 3, 3)
_PROJ_DIM = 32
EMBEDDING_DIM = int(np.prod(_HIST_BINS)) + 144 + _PROJ_DIM
_PROJECTION = (np.random.default_rng(PROJECTION_SEED).standard_normal((32 * 32, _PROJ_DIM))
               / np.sqrt(_PROJ_DIM)).astype(np.float32)


def appearance_embedding(rgb: np.ndarray) -> np.ndarray:
    """The embedding of ``rgb`` (H, W, 3) uint8: float32 of shape (:data:`EMBEDDING_DIM`,)."""
    rgb = np.ascontiguousarray(rgb)
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)
    hist = cv2.calcHist([hsv], [0, 1, 2], None, list(_HIST_BINS), [0, 180, 0, 256, 0, 256])
    hist = hist.reshape(-1) / max(1.0, float(hist.sum()))
    g = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    thumb64 = cv2.resize(g, (64, 64), interpolation=cv2.INTER_AREA).astype(np.float32) / 255
    edges = hog(thumb64, orientations=9, pixels_per_cell=(16, 16), cells_per_block=(1, 1),
                feature_vector=True)
    thumb32 = cv2.resize(g, (32, 32), interpolation=cv2.INTER_AREA).astype(np.float32)
    thumb32 = (thumb32 - thumb32.mean()) / (thumb32.std() + 1e-6)
    proj = thumb32.reshape(-1) @ _PROJECTION
    return np.concatenate([hist, edges, proj]).astype(np.float32)
