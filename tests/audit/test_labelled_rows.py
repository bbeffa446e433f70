"""The check of which production rows carry a label: labels missing at random are called random at
about the nominal rate, labels given by a context are found."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audit.pipeline.columns import resolve_columns
from audit.pipeline.labelled_rows import LabelledRows, selection_note, set_aside_one_sided
from tests.service.newcomer_tables import titanic

CONTEXTS = ("sex", "passengerClass", "age")
ALPHA = 0.05


def _flagged(frame, mask) -> bool:
    return "not given at random" in selection_note(frame, LabelledRows(mask=mask), CONTEXTS, ALPHA)["reason"]


@pytest.mark.slow
def test_labels_missing_at_random_are_rarely_called_selected():
    _, prod = titanic(seed=12)
    rng = np.random.default_rng(0)
    runs = 300
    flagged = sum(_flagged(prod, rng.random(len(prod)) < 0.5) for _ in range(runs))
    # Bonferroni over three contexts keeps the family's false-alarm rate at or below alpha; 3 sigma of slack
    assert flagged / runs <= ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / runs)


@pytest.mark.slow
def test_labels_given_more_often_to_one_class_of_passenger_are_found():
    _, prod = titanic(seed=12)
    rng = np.random.default_rng(1)
    # SYNTHETIC: first-class passengers labelled 80 % of the time, the others 45 %
    p = np.where(prod["passengerClass"] == "1st", 0.8, 0.45)
    found = sum(_flagged(prod, rng.random(len(prod)) < p) for _ in range(100))
    assert found >= 90


def _columns(frame: pd.DataFrame):
    roles = {c: "feature" for c in frame.columns} | {"label": "label", "prediction": "prediction"}
    return resolve_columns(roles, roles)


def test_each_empty_feature_is_set_aside_with_what_is_true_of_it():
    n = 20
    bench = pd.DataFrame({"age": np.arange(n, dtype=float), "jpeg_quality": np.nan, "face_height_px": np.nan,
                          "label": 0, "prediction": 0})
    prod = bench.assign(jpeg_quality=90.0)
    notes: list[dict[str, str]] = []
    kept = set_aside_one_sided(bench, prod, _columns(bench), notes,
                               {"columns": ["jpeg_quality", "face_height_px"]})
    assert kept.features == ("age",)
    said = {n["part"]: n["reason"] for n in notes}
    assert "has no values in the benchmark but has values in the production" in said["feature jpeg_quality"]
    both = said["feature face_height_px"]
    assert "no values in either dataset" in both and "has values in" not in both and "none of them" in both
