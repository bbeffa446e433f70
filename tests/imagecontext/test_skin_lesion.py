"""The skin around a lesion: normalised by the frame's non-skin reference, so an exposure or a
warm light keeps its ITA group and darker skin moves it; a close-up that is all skin is missing
with ``no_reference``.

Images: :mod:`tests.imagecontext.dermatology` (real skin from packaged photos in a SYNTHETIC
dermatology-like frame). Perturbations (SYNTHETIC): exposure x0.7 and x0.85 (sRGB), a warm light
(linear red x1.25, blue x0.75), darker skin (CIELAB L* -22, b* +8 on the skin only).
"""
from __future__ import annotations

import numpy as np
import pytest

from imagecontext.skin import MISSING_REASONS, skin_tone_lesion
from tests.imagecontext.dermatology import close_up, darker_skin, exposure, lesion_frame, skin_patches, warm_light


@pytest.fixture(scope="module")
def patches():
    return skin_patches()


def frames(patches, plant=lambda p: p):
    """One frame per patch, the same frame layout (seed) whatever ``plant`` does to the skin."""
    return [lesion_frame(plant(p), np.random.default_rng(i)) for i, p in enumerate(patches)]


@pytest.fixture(scope="module")
def baseline(patches):
    return [skin_tone_lesion(f) for f in frames(patches)]


def compare(baseline, after):
    """(read at baseline, group changed, missing after)."""
    pairs = [(b, a) for b, a in zip(baseline, after) if b.ita is not None]
    return (len(pairs), sum(a.ita is not None and a.category != b.category for b, a in pairs),
            sum(a.ita is None for _, a in pairs))


def test_most_frames_are_read_with_their_reference(baseline):
    read = [t for t in baseline if t.ita is not None]
    assert len(read) >= 0.7 * len(baseline) and len(read) >= 15
    assert all(0 < t.confidence <= 1 and t.source == "non_lesion" for t in read)
    assert all(t.missing in MISSING_REASONS for t in baseline if t.ita is None)


@pytest.mark.parametrize("k", [0.85, 0.7])
def test_exposure_keeps_the_tone_group(patches, baseline, k):
    n, changed, missing = compare(baseline, [skin_tone_lesion(exposure(f, k)) for f in frames(patches)])
    assert changed <= 0.05 * n and missing <= 0.05 * n, (n, changed, missing)


def test_a_warm_light_keeps_the_tone_group_or_says_clipped(patches, baseline):
    after = [skin_tone_lesion(warm_light(f)) for f in frames(patches)]
    n, changed, missing = compare(baseline, after)
    assert changed <= 0.2 * n, (n, changed, missing)
    assert {a.missing for b, a in zip(baseline, after) if b.ita is not None and a.ita is None} <= {"clipped"}


def test_darker_skin_lowers_the_ita(patches, baseline):
    darker = [skin_tone_lesion(f) for f in frames(patches, darker_skin)]
    drops = [b.ita - d.ita for b, d in zip(baseline, darker) if b.ita is not None and d.ita is not None]
    assert len(drops) >= 15 and min(drops) > 10 and np.median(drops) > 30, drops


def test_a_close_up_that_is_all_skin_has_no_tone(patches):
    close = [skin_tone_lesion(close_up(p, np.random.default_rng(i))) for i, p in enumerate(patches)]
    assert sum(t.missing == "no_reference" for t in close) >= 0.85 * len(close)
    assert sum(t.ita is not None for t in close) <= 0.1 * len(close)
