"""Extractors move the right way under controlled, documented perturbations of real photos.

Perturbations (all deterministic): darken = pixel values × 0.5; blur = Gaussian σ = 3 px;
JPEG = re-encode at quality 30 / 95; downscale = half each side; cast = red channel +40,
blue −40; noise = Gaussian σ = 12 grey levels (seeded).
"""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from imagecontext import COLUMNS, EMBEDDING_DIM, decode, embed, embedding_columns, extract
from imagecontext.skin import ita_category
from tests.imagecontext.images import encode, photos

PHOTOS = photos()


def values(rgb, fmt="PNG", **kw):
    return extract(decode(encode(rgb, fmt, **kw)), faces=False)


def darken(rgb):
    return (rgb.astype(np.float32) * 0.5).astype(np.uint8)


def blur(rgb):
    return cv2.GaussianBlur(rgb, (0, 0), 3)


def cast(rgb):
    out = rgb.astype(np.int16)
    out[..., 0] += 40
    out[..., 2] -= 40
    return np.clip(out, 0, 255).astype(np.uint8)


def noisy(rgb, seed=0):
    rng = np.random.default_rng(seed)
    return np.clip(rgb + rng.normal(0, 12, rgb.shape), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("name", sorted(PHOTOS))
def test_darkening_lowers_brightness(name):
    rgb = PHOTOS[name]
    before, after = values(rgb), values(darken(rgb))
    assert after["img_brightness"] < before["img_brightness"] - 10
    assert after["img_dark_share"] >= before["img_dark_share"]


@pytest.mark.parametrize("name", sorted(PHOTOS))
def test_blur_lowers_sharpness(name):
    rgb = PHOTOS[name]
    assert values(blur(rgb))["img_sharpness"] < 0.5 * values(rgb)["img_sharpness"]


@pytest.mark.parametrize("name", sorted(PHOTOS))
def test_jpeg_quality_recovered(name):
    rgb = PHOTOS[name]
    q30 = values(rgb, "JPEG", quality=30)["img_jpeg_quality"]
    q95 = values(rgb, "JPEG", quality=95)["img_jpeg_quality"]
    assert abs(q30 - 30) <= 2 and abs(q95 - 95) <= 2
    assert values(rgb)["img_jpeg_quality"] is None  # PNG has no quantisation tables


def test_chroma_subsampling_reported():
    rgb = PHOTOS["coffee"]
    assert values(rgb, "JPEG", subsampling=0)["img_chroma_subsampling"] == "4:4:4"
    assert values(rgb, "JPEG", subsampling=2)["img_chroma_subsampling"] == "4:2:0"


@pytest.mark.parametrize("name", sorted(PHOTOS))
def test_downscale_lowers_megapixels(name):
    rgb = PHOTOS[name]
    small = cv2.resize(rgb, (rgb.shape[1] // 2, rgb.shape[0] // 2), interpolation=cv2.INTER_AREA)
    before, after = values(rgb), values(small)
    assert after["img_megapixels"] == pytest.approx(before["img_megapixels"] / 4, rel=0.02)
    assert after["img_aspect"] == pytest.approx(before["img_aspect"], rel=0.02)


@pytest.mark.parametrize("name", sorted(PHOTOS))
def test_colour_cast_moves_a_and_b(name):
    rgb = PHOTOS[name]
    before, after = values(rgb), values(cast(rgb))
    assert after["img_cast_a"] > before["img_cast_a"] + 3  # redder
    assert after["img_cast_b"] > before["img_cast_b"] + 3  # less blue = more yellow


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", sorted(PHOTOS))
def test_added_noise_raises_noise(name, seed):
    rgb = PHOTOS[name]
    assert values(noisy(rgb, seed))["img_noise"] > values(rgb)["img_noise"] + 1.0


def test_contrast_falls_when_flattened():
    rgb = PHOTOS["astronaut"]
    flat = (128 + (rgb.astype(np.float32) - 128) * 0.3).astype(np.uint8)
    assert values(flat)["img_contrast"] < 0.5 * values(rgb)["img_contrast"]


def test_columns_stable_and_faces_optional():
    d = decode(encode(PHOTOS["astronaut"]))
    full = extract(d)
    assert tuple(full) == COLUMNS
    assert full["face_count"] >= 1 and full["face_found"] is True and full["face_rotation"] == 0
    assert 0 < full["face_area_share"] < 1
    assert full["skin_missing"] is None and full["skin_ita_category"] == ita_category(full["skin_ita"])
    assert full["skin_surround_ita"] is None  # a face was found: no lesion reading
    quick = extract(d, faces=False)
    assert quick["face_count"] is None and quick["skin_ita"] is None


def test_darkening_leaves_the_face_ita_but_lowers_brightness():
    # the skin tone is exposure-normalised; the brightness column carries the exposure
    rgb = PHOTOS["astronaut"]
    before = extract(decode(encode(rgb)))
    after = extract(decode(encode(darken(rgb))))
    assert after["face_count"] >= 1
    assert after["skin_ita"] == pytest.approx(before["skin_ita"], abs=5)
    assert after["img_brightness"] < before["img_brightness"] - 10


def test_lesion_excluded_from_dermatology_skin():
    # a light skin-coloured field with a dark central "lesion" inside a white border (the
    # reference): ITA reads the skin only
    skin = np.full((200, 200, 3), 240, np.uint8)
    skin[20:180, 20:180] = (224, 180, 150)
    lesion = skin.copy()
    cv2.circle(lesion, (100, 100), 25, (70, 40, 30), -1)
    plain = extract(decode(encode(skin)), skin="lesion")["skin_surround_ita"]
    spotted = extract(decode(encode(lesion)), skin="lesion")["skin_surround_ita"]
    assert plain is not None and spotted == pytest.approx(plain, abs=2)
    # all skin: nothing tells the exposure from the skin's lightness (a uniform field with a lesion
    # filling the centre is paper under a warm light as much as skin: that ambiguity is not tested)
    close = extract(decode(encode(lesion[20:180, 20:180])), skin="lesion")
    assert close["skin_surround_ita"] is None and close["skin_surround_missing"] == "no_reference"


@pytest.mark.parametrize("ita,category", [(60, "very_light"), (50, "light"), (30, "intermediate"),
                                          (20, "tan"), (0, "brown"), (-40, "dark")])
def test_ita_categories(ita, category):
    assert ita_category(ita) == category


def test_embedding_fixed_and_appearance_sensitive():
    rgb = PHOTOS["chelsea"]
    d = decode(encode(rgb))
    a, b = embed(d), embed(decode(encode(rgb)))
    assert a.shape == (EMBEDDING_DIM,) and len(embedding_columns()) == EMBEDDING_DIM
    assert np.array_equal(a, b)
    dark = embed(decode(encode(darken(rgb))))
    other = embed(decode(encode(PHOTOS["coffee"])))
    assert np.linalg.norm(dark - a) > 0.05
    assert np.linalg.norm(other - a) > np.linalg.norm(embed(decode(encode(rgb, "JPEG", quality=90))) - a)


def test_grey_image_has_no_skin_tone():
    from tests.imagecontext.images import lfw_upscaled

    faces, _ = lfw_upscaled()
    values = extract(decode(encode(faces[0])))
    assert values["face_count"] >= 1 and values["skin_ita"] is None
    assert values["skin_missing"] == "no_colour"


@pytest.mark.slow
def test_embedding_follows_light_and_compression_not_a_flip():
    # SYNTHETIC perturbations of real photos; distances relative to the median distance
    # between two different photos
    import itertools

    from tests.imagecontext.images import feat_photo, non_face_photos

    photos_ = list(non_face_photos().values()) + [PHOTOS["astronaut"], feat_photo("single_face.jpg")]
    vec = lambda rgb, fmt="PNG", **kw: embed(decode(encode(rgb, fmt, **kw)))  # noqa: E731
    base = [vec(x) for x in photos_]
    between = np.median([np.linalg.norm(a - b) for a, b in itertools.combinations(base, 2)])
    moved = lambda f: np.median([np.linalg.norm(f(x) - b) for x, b in zip(photos_, base)]) / between  # noqa: E731
    flip = moved(lambda x: vec(x[:, ::-1]))
    dark = moved(lambda x: vec(darken(x)))
    heavy_jpeg = moved(lambda x: vec(x, "JPEG", quality=20))
    light_jpeg = moved(lambda x: vec(x, "JPEG", quality=95))
    assert flip < 0.1 < dark and flip < 0.2 * dark
    assert heavy_jpeg > 0.25 and heavy_jpeg > 5 * light_jpeg
    assert moved(lambda x: vec(blur(x))) > 0.3


def test_embedding_columns_use_the_detector_prefix():
    import pandas as pd

    from detectors.embedding import embedding_matrix

    v = embed(decode(encode(PHOTOS["coffee"])))
    frame = pd.DataFrame([v], columns=list(embedding_columns()))
    assert embedding_matrix(frame).shape == (1, EMBEDDING_DIM)
