"""The face detector on real LFW crops (upscaled ×4, and to 640 px) and on LFW's non-face
patches; what it scans bounds its cost."""
from __future__ import annotations

import cv2
import numpy as np

import imagecontext.faces as faces_module
from imagecontext import decode, extract
from imagecontext.faces import detect_faces
from tests.imagecontext.images import encode, lfw_upscaled, photos


def test_finds_lfw_faces_and_rejects_non_faces():
    faces, non_faces = lfw_upscaled()
    found = np.mean([detect_faces(x).count > 0 for x in faces])
    false = np.mean([detect_faces(x).count > 0 for x in non_faces])
    assert found >= 0.90, found
    assert false <= 0.05, false


def test_face_box_in_fractions_and_no_face_in_coffee():
    faces = detect_faces(photos()["astronaut"])
    box = faces.largest
    assert faces.count >= 1 and 0 <= box.x < 1 and 0 < box.w <= 1
    assert 0.3 < box.centre[0] < 0.6 and box.centre[1] < 0.5  # her face: upper middle
    assert detect_faces(photos()["coffee"]).count == 0


def lfw_at(side: int) -> tuple[np.ndarray, np.ndarray]:
    """The LFW crops (faces, non-faces) enlarged to ``side`` px, as a camera frame would be."""
    faces, non_faces = lfw_upscaled()
    grow = lambda a: [cv2.resize(x, (side, side), interpolation=cv2.INTER_LINEAR) for x in a]
    return grow(faces), grow(non_faces)


def test_finds_lfw_faces_at_640_px_through_extract():
    faces, non_faces = lfw_at(640)
    found = np.mean([extract(decode(encode(x)))["face_count"] > 0 for x in faces])
    false = np.mean([extract(decode(encode(x)))["face_count"] > 0 for x in non_faces])
    assert found >= 0.90, found
    assert false <= 0.05, false


class Recording:
    """A cascade that records the size of each image it scans."""

    def __init__(self, cascade, scanned: list):
        self.cascade, self.scanned = cascade, scanned

    def detectMultiScale(self, image, **kw):  # noqa: N802 - OpenCV's name
        self.scanned.append(max(image.shape))
        return self.cascade.detectMultiScale(image, **kw)


def scans(monkeypatch, rgb) -> tuple[list, list]:
    frontal, profile = faces_module._cascades()
    seen_frontal, seen_profile = [], []
    monkeypatch.setattr(faces_module._local, "cascades",
                        (Recording(frontal, seen_frontal), Recording(profile, seen_profile)))
    detect_faces(rgb)
    return seen_frontal, seen_profile


def test_large_images_are_scanned_at_a_capped_size(monkeypatch):
    # the cost grows with the scanned area: a 640 px photo is scanned at most 231 px
    # (192 plus the 10 % border) frontally and, when no frontal face is found, twice at
    # most 116 px (96 plus border) for profiles
    coffee = cv2.resize(photos()["coffee"], (640, 640), interpolation=cv2.INTER_AREA)
    frontal, profile = scans(monkeypatch, coffee)
    assert len(frontal) == 1 and frontal[0] <= 231
    assert len(profile) == 2 and max(profile) <= 116
    astronaut = cv2.resize(photos()["astronaut"], (640, 640), interpolation=cv2.INTER_AREA)
    frontal, profile = scans(monkeypatch, astronaut)
    assert len(frontal) == 1 and profile == []  # a frontal face found: no profile passes
