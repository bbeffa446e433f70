"""The native crop: the image's own pixels, on the JPEG grid, where the detail is."""
from __future__ import annotations

import numpy as np
import pytest
import skimage.data

from imagecontext import DETAIL_SIDE, decode, detail_crop
from imagecontext.compression import blockiness
from tests.imagecontext.images import encode, photos


def origin(rgb, crop):
    """Where ``crop`` sits in ``rgb`` pixel for pixel, or ``None``."""
    h, w = crop.shape[:2]
    for y in range(rgb.shape[0] - h + 1):
        for x in range(rgb.shape[1] - w + 1):
            if np.array_equal(rgb[y:y + h, x:x + w], crop):
                return y, x
    return None


@pytest.mark.slow
def test_the_crop_is_native_pixels_on_the_jpeg_grid():
    for name, rgb in photos().items():
        decoded = decode(encode(rgb, "JPEG", quality=20)).rgb
        crop = detail_crop(decoded)
        assert crop.shape == (DETAIL_SIDE, DETAIL_SIDE, 3), name
        y, x = origin(decoded, crop)
        assert y % 8 == 0 and x % 8 == 0, name


def test_the_crop_keeps_the_blocks_a_thumbnail_loses():
    # a q20 JPEG's 8x8 grid: strong in the native crop, gone once the image is shrunk to a thumbnail
    import cv2

    decoded = decode(encode(skimage.data.astronaut(), "JPEG", quality=20)).rgb
    crop = cv2.cvtColor(detail_crop(decoded), cv2.COLOR_RGB2GRAY)
    small = cv2.cvtColor(cv2.resize(decoded, (128, 128), interpolation=cv2.INTER_AREA), cv2.COLOR_RGB2GRAY)
    assert blockiness(crop) > 1.3 and blockiness(small) < blockiness(crop) - 0.2


def test_the_most_textured_block_is_chosen():
    rng = np.random.default_rng(0)
    rgb = np.full((256, 384, 3), 128, np.uint8)
    rgb[64:192, 256:384] = rng.integers(0, 256, (128, 128, 3), dtype=np.uint8)  # texture on the right only
    y, x = origin(rgb, detail_crop(rgb))
    assert x >= 256 - 8 and 64 - 8 <= y <= 192


def test_small_images_are_kept_whole():
    rgb = np.zeros((30, 200, 3), np.uint8)
    assert detail_crop(rgb).shape == (30, DETAIL_SIDE, 3)


def test_docstring_examples():
    import doctest

    import imagecontext.detail
    import imagecontext.skin

    for module in (imagecontext.detail, imagecontext.skin):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
