"""Packs map derived image values to their context columns; the user's own column wins."""
from __future__ import annotations

import pandas as pd
import pytest

from domains.derived import DerivedContext
from domains.loader import PackError, load_builtin, load_pack_dict


def frame(**columns):
    return pd.DataFrame(columns)


def test_builtin_face_pack_derives_illumination_size_and_tone():
    pack = load_builtin("facial_expression")
    data = frame(img_brightness=[20.0, 50.0, 90.0], face_height_px=[30.0, 120.0, None],
                 skin_ita_category=["dark", "light", None])
    out, added = pack.derive_context(data)
    assert added == ("illumination", "face_size", "skin_tone")
    assert out["illumination"].tolist() == ["dim", "normal", "overexposed"]
    assert out["face_size"].tolist()[:2] == [30.0, 120.0]
    assert out["skin_tone"].tolist()[:2] == [6, 2]
    masks = pack.slice_masks(out)
    assert masks["dim_or_backlit"].tolist() == [True, False, False]
    assert masks["small_faces"].tolist() == [True, False, False]
    assert masks["darker_skin"].tolist() == [True, False, False]


def test_user_column_wins():
    pack = load_builtin("facial_expression")
    data = frame(img_brightness=[20.0, 20.0], illumination=["backlit", "normal"])
    out, added = pack.derive_context(data)
    assert "illumination" not in added
    assert out["illumination"].tolist() == ["backlit", "normal"]


def test_deepfake_compression_and_out_of_range_count():
    pack = load_builtin("deepfake")
    out, added = pack.derive_context(frame(img_jpeg_quality=[30, 75, 95, None], face_count=[0, 1, 2, 3]))
    assert out["compression"].tolist() == ["heavy", "light", "raw", None]
    # num_faces is declared 1..100: an image with no face gets a missing value, not an error
    assert pd.isna(out["num_faces"].iloc[0]) and out["num_faces"].tolist()[1:] == [1, 2, 3]


def test_dermatology_skin_tone_is_the_ita_group_around_the_lesion_never_fitzpatrick():
    pack = load_builtin("medical")
    out, added = pack.derive_context(frame(skin_surround_category=["tan", "brown", None]))
    assert added == ("skin_tone",) and "fitzpatrick" not in out.columns
    assert out["skin_tone"].tolist() == ["tan", "brown", None]
    tone = next(c for c in pack.context if c.name == "skin_tone")
    assert tone.type == "categorical" and "not a Fitzpatrick type" in tone.description
    assert pack.slice("darker_skin_tone").expression == 'skin_tone in ["brown", "dark"]'


def _pack(derived):
    return {"name": "p", "title": "P", "description": "d", "task": "multiclass",
            "classes": ["a", "b"], "metrics": ["accuracy"],
            "context": [{"name": "light", "type": "categorical", "values": ["dim", "ok"],
                         "description": "x"}],
            "derived": derived}


@pytest.mark.parametrize("derived,fault", [
    ({"nope": {"from": "img_brightness"}}, "not a declared context column"),
    ({"light": {"from": "img_brightness", "bins": [[0, 50, "dark"]]}}, "not among the allowed"),
    ({"light": {"from": "img_brightness", "bins": [[0, 50, "dim"], [40, 90, "ok"]]}}, "overlap"),
    ({"light": {"from": "img_brightness"}}, "not among the allowed"),
])
def test_bad_derived_blocks_rejected(derived, fault):
    with pytest.raises(PackError, match=fault):
        load_pack_dict(_pack(derived))


def test_values_outside_bins_are_missing():
    rule = DerivedContext.model_validate({"from": "x", "bins": [[0, 10, "lo"]]})
    assert rule.apply(pd.Series([5, 10, -1, None])).tolist() == ["lo", None, None, None]
