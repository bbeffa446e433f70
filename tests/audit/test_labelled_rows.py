"""The check of which production rows carry a label: labels missing at random are called random at
about the nominal rate, labels given by a context are found."""
from __future__ import annotations

import numpy as np

from audit.pipeline.labelled_rows import LabelledRows, selection_note
from tests.service.newcomer_tables import titanic

CONTEXTS = ("sex", "passengerClass", "age")
ALPHA = 0.05


def _flagged(frame, mask) -> bool:
    return "not given at random" in selection_note(frame, LabelledRows(mask=mask), CONTEXTS, ALPHA)["reason"]


def test_labels_missing_at_random_are_rarely_called_selected():
    _, prod = titanic(seed=12)
    rng = np.random.default_rng(0)
    runs = 300
    flagged = sum(_flagged(prod, rng.random(len(prod)) < 0.5) for _ in range(runs))
    # Bonferroni over three contexts keeps the family's false-alarm rate at or below alpha; 3 sigma of slack
    assert flagged / runs <= ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / runs)


def test_labels_given_more_often_to_one_class_of_passenger_are_found():
    _, prod = titanic(seed=12)
    rng = np.random.default_rng(1)
    # SYNTHETIC: first-class passengers labelled 80 % of the time, the others 45 %
    p = np.where(prod["passengerClass"] == "1st", 0.8, 0.45)
    found = sum(_flagged(prod, rng.random(len(prod)) < p) for _ in range(100))
    assert found >= 90
