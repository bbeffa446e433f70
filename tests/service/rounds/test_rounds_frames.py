"""A round's table in standard form, and the checks against the series' domain."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from domains import load_builtin
from service.errors import InvalidRequest
from service.rounds.frames import check_domain, round_table

MEDICAL = load_builtin("medical")
ROLES = {"id": "id", "label": "label", "prediction": "prediction", "fitzpatrick": "context",
         "clinical_site": "context", "annotator_id": "annotator", "validated": "feature"}


def _frame(**over):
    base = {"id": ["a", "a", "a", "b", "c"], "label": ["benign", "malignant", "malignant", "benign", None],
            "prediction": ["malignant"] * 4 + ["benign"], "fitzpatrick": [5.0, 5.0, 5.0, np.nan, 2.0],
            "clinical_site": ["site_a"] * 5, "annotator_id": ["x", "y", "z", "x", "x"],
            "validated": ["yes", "yes", "yes", "no", "no"]}
    return pd.DataFrame({**base, **over})


def test_majority_label_per_item_and_raw_annotations_kept():
    table = round_table(_frame(), ROLES)
    assert table.n_dropped == 1 and len(table.annotations) == 4
    assert table.items["y"].tolist() == ["malignant", "benign"]  # item "a": two of three said malignant
    assert table.items["validated"].tolist() == [True, False] and table.has_validation


def test_float_coded_integers_do_not_contradict_the_domain():
    check_domain(round_table(_frame(), ROLES), MEDICAL, "ds")


@pytest.mark.parametrize("column, value", [("clinical_site", "mars"), ("fitzpatrick", 9.0), ("label", "cat")])
def test_values_outside_the_domain_are_refused(column, value):
    frame = _frame(**{column: [value] * 5})
    with pytest.raises(InvalidRequest) as err:
        check_domain(round_table(frame, ROLES), MEDICAL, "ds")
    assert err.value.code == "round_contradicts_domain" and err.value.details["faults"][0]["column"] == column


def test_a_table_without_predictions_is_refused():
    with pytest.raises(InvalidRequest) as err:
        round_table(_frame(), {**ROLES, "prediction": "feature"}, "ds_1")
    assert err.value.code == "round_not_labelled" and err.value.details["missing"] == ["prediction"]
