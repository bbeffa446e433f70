"""One registry of the metrics the service knows: their names, aliases, direction and kind.

Every "is lower better?", "is it a proportion of rows?" question in the service is answered
here, so a metric cannot be better-when-lower in one module and worse-when-lower in another.

>>> metric_info("false_positive_rate").name, lower_is_better("FPR"), is_proportion("macro_f1")
('fpr', True, False)
>>> canonical("recall")
'sensitivity'
>>> saturated("accuracy", 0.91, 0.97, threshold=0.9), saturated("accuracy", 0.88, 0.95, threshold=0.9)
(True, False)
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MetricInfo", "METRIC_REGISTRY", "metric_info", "canonical", "lower_is_better", "is_proportion",
           "saturated"]


@dataclass(frozen=True)
class MetricInfo:
    """What the service needs to know about one metric.

    name : the canonical name
    aliases : other spellings users and packs write
    lower_is_better : an error-type metric (a drop in value is an improvement)
    proportion : a share of rows (``value × n`` counts successes: Wilson/Newcombe intervals apply)
    """

    name: str
    aliases: tuple[str, ...] = ()
    lower_is_better: bool = False
    proportion: bool = False


METRIC_REGISTRY: tuple[MetricInfo, ...] = (
    MetricInfo("accuracy", ("acc",), proportion=True),
    MetricInfo("error_rate", ("error",), lower_is_better=True, proportion=True),
    MetricInfo("sensitivity", ("recall", "tpr", "recall_per_manipulation", "true_positive_rate"), proportion=True),
    MetricInfo("specificity", ("tnr", "true_negative_rate"), proportion=True),
    MetricInfo("precision", ("ppv", "positive_predictive_value"), proportion=True),
    MetricInfo("npv", ("negative_predictive_value",), proportion=True),
    MetricInfo("fpr", ("false_positive_rate",), lower_is_better=True, proportion=True),
    MetricInfo("fnr", ("false_negative_rate",), lower_is_better=True, proportion=True),
    MetricInfo("balanced_accuracy", ()),
    MetricInfo("macro_f1", ()),
    MetricInfo("f1", ()),
    MetricInfo("auc", ("roc_auc",)),
    MetricInfo("ece", (), lower_is_better=True),
    MetricInfo("brier", (), lower_is_better=True),
    MetricInfo("log_loss", (), lower_is_better=True),
    MetricInfo("mae", (), lower_is_better=True),
    MetricInfo("rmse", (), lower_is_better=True),
    MetricInfo("mse", (), lower_is_better=True),
)
_BY_NAME = {spelling: info for info in METRIC_REGISTRY for spelling in (info.name, *info.aliases)}


def metric_info(metric: object) -> MetricInfo:
    """The registry entry of ``metric`` (any alias, any case); an unknown name is a higher-is-better
    non-proportion metric of that name, so a user's own metric still ranks sensibly."""
    key = str(metric or "").strip().lower()
    return _BY_NAME.get(key) or MetricInfo(key)


def canonical(metric: object) -> str:
    return metric_info(metric).name


def lower_is_better(metric: object) -> bool:
    return metric_info(metric).lower_is_better


def is_proportion(metric: object) -> bool:
    return metric_info(metric).proportion


def saturated(metric: object, ci_low: float | None, ci_high: float | None, *, threshold: float) -> bool:
    """Saturation has one meaning, for the audit and for a benchmark's rounds: the metric is
    *credibly* at or above ``threshold``, i.e. the lower bound of its interval is (for a
    lower-is-better metric such as the error rate, the upper bound is at or below
    ``1 - threshold``). A point value past the threshold with an interval reaching below it is
    sampling error, not saturation; without an interval nothing is saturated."""
    if ci_low is None or ci_high is None or ci_low != ci_low or ci_high != ci_high:  # None or NaN
        return False
    if lower_is_better(metric):
        return bool(ci_high <= 1 - threshold)
    return bool(ci_low >= threshold)
