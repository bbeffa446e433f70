"""The face detector on real LFW crops (upscaled ×4) and on LFW's non-face patches."""
from __future__ import annotations

import numpy as np

from imagecontext.faces import detect_faces
from tests.imagecontext.images import lfw_upscaled, photos


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
