"""Skin tone as the Individual Typology Angle (ITA) and its category.

``ITA = atan((L* - 50) / b*) * 180 / pi`` on the median L* and b* of skin pixels, with
b* floored at a small positive value (skin is yellowish; a blue-cast patch gives
+/-90). Skin pixels are taken

* on a face photo, from the inner part of the largest face box (the box trimmed to its
  central 60 % width and 25..85 % height, dropping hair and background), keeping pixels
  a YCrCb skin rule accepts (all inner pixels if fewer than 10 % pass);
* on dermatology images (no face), from the image minus the lesion: the darkest blob
  near the centre (Otsu threshold of L*, the component nearest the centre, dilated) and
  near-black vignette pixels are excluded.

A greyscale image (median chroma of the skin pixels < 2) has no skin tone: ``None``.
ITA moves with exposure and colour cast (darkening lowers L* and so the ITA): read it
beside ``img_brightness`` and ``img_cast_b``.

Categories (Chardon et al. 1991; Del Bino et al. 2013): very light > 55 deg, light 41..55,
intermediate 28..41, tan 10..28, brown -30..10, dark < -30.

>>> ita_category(60.0), ita_category(30.0), ita_category(-45.0)
('very_light', 'intermediate', 'dark')
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from imagecontext.canonical import canonical_rgb, lab
from imagecontext.faces import FaceBox

__all__ = ["SkinTone", "ita_category", "skin_tone_face", "skin_tone_lesion"]

_B_FLOOR = 1e-3
_MIN_CHROMA = 2.0  # median CIELAB chroma below which the skin is grey (no ITA)
_CATEGORIES = ((55.0, "very_light"), (41.0, "light"), (28.0, "intermediate"),
               (10.0, "tan"), (-30.0, "brown"))


@dataclass(frozen=True)
class SkinTone:
    """ITA in degrees, its category, where the skin came from (face/non_lesion), pixels used."""

    ita: float
    category: str
    source: str
    n_pixels: int


def ita_category(ita: float) -> str:
    """The skin-tone category of an ITA in degrees."""
    for lower, name in _CATEGORIES:
        if ita > lower:
            return name
    return "dark"


def _ita(lab_px: np.ndarray) -> float:
    L = float(np.median(lab_px[:, 0]))
    b = max(float(np.median(lab_px[:, 2])), _B_FLOOR)
    return math.degrees(math.atan((L - 50.0) / b))


def _result(lab_px: np.ndarray, source: str) -> SkinTone | None:
    if len(lab_px) == 0:
        return None
    if float(np.median(np.hypot(lab_px[:, 1], lab_px[:, 2]))) < _MIN_CHROMA:
        return None  # a grey image has no hue: ITA would read +/-90 from lightness alone
    ita = _ita(lab_px)
    return SkinTone(ita, ita_category(ita), source, int(len(lab_px)))


def skin_tone_face(rgb: np.ndarray, face: FaceBox) -> SkinTone | None:
    """Skin tone from the inner part of ``face`` in ``rgb`` (H, W, 3) uint8."""
    h, w = rgb.shape[:2]
    x0 = int((face.x + 0.2 * face.w) * w)
    x1 = int(math.ceil((face.x + 0.8 * face.w) * w))
    y0 = int((face.y + 0.25 * face.h) * h)
    y1 = int(math.ceil((face.y + 0.85 * face.h) * h))
    patch = np.ascontiguousarray(rgb[max(0, y0):max(y0 + 1, y1), max(0, x0):max(x0 + 1, x1)])
    if patch.size == 0:
        return None
    patch = canonical_rgb(patch, side=min(128, max(patch.shape[:2])))
    ycc = cv2.cvtColor(patch, cv2.COLOR_RGB2YCrCb)
    mask = ((ycc[..., 1] >= 133) & (ycc[..., 1] <= 173)
            & (ycc[..., 2] >= 77) & (ycc[..., 2] <= 127))
    lab_px = lab(patch).reshape(-1, 3)
    if mask.mean() >= 0.1:
        lab_px = lab_px[mask.reshape(-1)]
    return _result(lab_px, "face")


def skin_tone_lesion(rgb: np.ndarray) -> SkinTone | None:
    """Skin tone of ``rgb`` (H, W, 3) uint8 with the central dark blob (the lesion) excluded."""
    small = canonical_rgb(rgb)
    lab_img = lab(small)
    L8 = np.clip(lab_img[..., 0] * 2.55, 0, 255).astype(np.uint8)
    _, dark = cv2.threshold(L8, 0, 1, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    n, labels, stats, centroids = cv2.connectedComponentsWithStats(dark, connectivity=8)
    h, w = L8.shape
    exclude = lab_img[..., 0] < 8.0  # vignette / black borders of dermoscopes
    if n > 1:
        d = np.hypot(centroids[1:, 0] / w - 0.5, centroids[1:, 1] / h - 0.5)
        big = stats[1:, cv2.CC_STAT_AREA] >= 0.005 * h * w
        if big.any():
            lesion = 1 + int(np.argmin(np.where(big, d, np.inf)))
            blob = (labels == lesion).astype(np.uint8)
            blob = cv2.dilate(blob, np.ones((7, 7), np.uint8))
            exclude |= blob.astype(bool)
    keep = ~exclude
    return _result(lab_img[keep], "non_lesion")
