"""Attribution in the pack's primary metric (audit.pipeline.mix.metric_rows)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from audit.pipeline.mix import metric_rows
from audit.pipeline.stage_context import Outputs

Y_TRUE = np.array(["dead", "dead", "alive", "alive", "dead"], dtype=object)
Y_PRED = np.array(["dead", "alive", "alive", "dead", "dead"], dtype=object)


def _pack(metric, positive="dead"):
    return SimpleNamespace(primary_metric=metric, positive_class=positive)


def test_sensitivity_is_the_mean_of_hits_over_the_positives():
    metric, rows, values = metric_rows(_pack("sensitivity"), Outputs(Y_TRUE, Y_PRED, None))
    assert metric == "sensitivity" and rows.tolist() == [True, True, False, False, True]
    assert values.tolist() == [1.0, 0.0, 1.0] and values.mean() == 2 / 3


def test_specificity_and_precision_use_their_own_rows():
    _, rows, values = metric_rows(_pack("specificity"), Outputs(Y_TRUE, Y_PRED, None))
    assert rows.tolist() == [False, False, True, True, False] and values.tolist() == [1.0, 0.0]
    _, rows, values = metric_rows(_pack("precision"), Outputs(Y_TRUE, Y_PRED, None))
    assert rows.tolist() == [True, False, False, True, True] and values.tolist() == [1.0, 0.0, 1.0]


def test_metrics_that_are_not_row_means_fall_back_to_accuracy_by_name():
    for metric in ("auc", "balanced_accuracy", "macro_f1"):
        name, rows, values = metric_rows(_pack(metric), Outputs(Y_TRUE, Y_PRED, None))
        assert name == "accuracy" and rows.all() and values.mean() == 0.6


def test_unlabelled_rows_have_no_values():
    name, rows, values = metric_rows(_pack("sensitivity"), Outputs(None, Y_PRED, None))
    assert name == "sensitivity" and values is None and rows.tolist() == [True, False, False, True, True]
