"""Faces: how many, how large the largest is, where it is, frontal or profile.

The detector is OpenCV's Haar cascades as the ``opencv-python-headless`` 4.x wheel ships
them (``cv2.data.haarcascades``; OpenCV 5 ships none): ``frontalface_alt2`` first, then
``profileface`` on the image and its mirror (the cascade knows one side), at half the
working size, when the frontal pass found none (a profile face under about 12 % of the
longest side is missed). Detection runs on histogram-equalised luma with the longest
side at most :data:`DETECT_SIDE` pixels, and faces smaller than 6 % of the longest side
are not looked for (this bounds the cost); boxes are reported in fractions of the image
so the working size does not show.

>>> import numpy as np
>>> detect_faces(np.full((64, 64, 3), 200, np.uint8)).count
0
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

__all__ = ["DETECT_SIDE", "FaceBox", "Faces", "detect_faces"]

DETECT_SIDE = 320  # cost grows with area: 640 px took 4x as long for the same faces found
_MIN_FACE = 20  # pixels at the working size: the cascades are trained on 20x20/24x24 windows
_MIN_FACE_SHARE = 0.06  # smallest face: 6 % of the longest side (20 px at the working size)
_PAD = 0.10
_SCALE_STEP = 1.2  # window growth between scales (1.1: 30 % slower, LFW 96 % vs 95 %)
_local = threading.local()  # CascadeClassifier is not safe to share across threads


@dataclass(frozen=True)
class FaceBox:
    """A face box in fractions of the image width/height (0..1); ``pose`` frontal/profile."""

    x: float
    y: float
    w: float
    h: float
    pose: str

    @property
    def area_share(self) -> float:
        return self.w * self.h

    @property
    def centre(self) -> tuple[float, float]:
        return (self.x + self.w / 2, self.y + self.h / 2)


@dataclass(frozen=True)
class Faces:
    """All detected faces, largest first."""

    boxes: tuple[FaceBox, ...]

    @property
    def count(self) -> int:
        return len(self.boxes)

    @property
    def largest(self) -> FaceBox | None:
        return self.boxes[0] if self.boxes else None


def _cascades() -> tuple[cv2.CascadeClassifier, cv2.CascadeClassifier]:
    found = getattr(_local, "cascades", None)
    if found is None:
        folder = Path(cv2.data.haarcascades)
        found = tuple(cv2.CascadeClassifier(str(folder / name)) for name in
                      ("haarcascade_frontalface_alt2.xml", "haarcascade_profileface.xml"))
        if any(c.empty() for c in found):
            raise RuntimeError(f"OpenCV Haar cascades missing under {folder}")
        _local.cascades = found
    return found


def _overlaps(a, b) -> bool:
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    ix = max(0, min(ax + aw, bx + bw) - max(ax, bx))
    iy = max(0, min(ay + ah, by + bh) - max(ay, by))
    return ix * iy > 0.3 * min(aw * ah, bw * bh)


def detect_faces(rgb: np.ndarray, *, min_neighbors: int = 4) -> Faces:
    """Faces in ``rgb`` (H, W, 3) uint8, largest first.

    ``min_neighbors=4`` (overlapping detections a face needs): 95 % of LFW crops found, no
    false box on LFW non-faces or on the astronaut photo's suit (3 gave one there).
    """
    h, w = rgb.shape[:2]
    scale = min(1.0, DETECT_SIDE / max(h, w))
    g = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2GRAY)
    if scale < 1.0:
        g = cv2.resize(g, (max(1, round(w * scale)), max(1, round(h * scale))),
                       interpolation=cv2.INTER_AREA)
    g = cv2.equalizeHist(g)
    gh, gw = g.shape
    # a face that fills a crop touches the border, where the cascade's windows do not fit;
    # a replicated 10 % border lets them (98 % instead of 92 % of LFW crops found)
    pad = int(round(_PAD * max(gh, gw)))
    g = cv2.copyMakeBorder(g, pad, pad, pad, pad, cv2.BORDER_REPLICATE)
    min_side = max(_MIN_FACE, int(_MIN_FACE_SHARE * max(gh, gw)))
    frontal, profile = _cascades()
    kw = dict(scaleFactor=_SCALE_STEP, minNeighbors=min_neighbors, minSize=(min_side, min_side))
    boxes = [(tuple(int(v) for v in b), "frontal") for b in frontal.detectMultiScale(g, **kw)]
    if not boxes:
        # only when the frontal pass found none, and at half the working size: each profile
        # pass costs twice a frontal one at the same size (90 vs 45 ms at 300 px here)
        half = cv2.resize(g, (max(1, g.shape[1] // 2), max(1, g.shape[0] // 2)), interpolation=cv2.INTER_AREA)
        pw = half.shape[1]
        kw_half = dict(kw, minSize=(_MIN_FACE, _MIN_FACE))
        side = [tuple(int(v) for v in b) for b in profile.detectMultiScale(half, **kw_half)]
        side += [(pw - int(x) - int(bw), int(y), int(bw), int(bh))
                 for x, y, bw, bh in profile.detectMultiScale(half[:, ::-1].copy(), **kw_half)]
        side = [tuple(2 * v for v in b) for b in side]
        kept: list = []
        for b in side:
            if not any(_overlaps(b, other) for other in kept):
                kept.append(b)
        boxes = [(b, "profile") for b in kept]
    faces = []
    for (x, y, bw, bh), pose in boxes:
        x0, y0 = max(0, x - pad), max(0, y - pad)
        x1, y1 = min(gw, x - pad + bw), min(gh, y - pad + bh)
        if x1 > x0 and y1 > y0:
            faces.append(FaceBox(x0 / gw, y0 / gh, (x1 - x0) / gw, (y1 - y0) / gh, pose))
    faces.sort(key=lambda f: f.area_share, reverse=True)
    return Faces(tuple(faces))
