"""Builds the AuditResult JSON (SPEC §9) from corrected detector results."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from detectors.base import to_jsonable
from service.pipeline.slicing import context_rows


def _d(obj: Any) -> Any:
    return None if obj is None else obj.to_dict()


def overall_block(metric_eval: Any) -> dict[str, Any] | None:
    if metric_eval is None:
        return None
    b, p = metric_eval.overall_benchmark, metric_eval.overall_production
    change = metric_eval.slices[0]
    change_test = next((t for t in metric_eval.tests if t.kind == "slice_performance"), None)
    excluded = change_test.details.get("excluded_contexts", []) if change_test is not None else []
    return to_jsonable({
        "metric": metric_eval.metric, "benchmark_value": b.value, "benchmark_ci": [b.ci_low, b.ci_high], "n": b.n,
        "production_value": p.value if p else None, "production_ci": [p.ci_low, p.ci_high] if p else None,
        "n_production": p.n if p else None, "change_p_value": change.p_value,
        "change_p_value_adjusted": change.p_value_adjusted, "changed": change.changed,
        "change_excluded_contexts": excluded})


def covariate_block(cov: Any, multivariate: Any, outputs: Any) -> dict[str, Any]:
    if cov is None:
        block: dict[str, Any] = {"is_shift": False, "features": [], "missing": [], "excluded": []}
    else:
        block = cov.to_dict()
    block["multivariate"] = _d(multivariate)
    block["outputs"] = _d(outputs)
    block["is_shift"] = bool(block["is_shift"] or (multivariate is not None and multivariate.is_shift))
    return block


def label_block(parts: dict[str, Any], overall: dict[str, Any] | None) -> dict[str, Any]:
    prior = parts.get("prior")
    block: dict[str, Any] = prior.to_dict() if prior is not None else {
        "is_shift": False, "p_value": None, "benchmark_prior": {}, "production_prior_estimate": {},
        "status": "not_run", "reason": "needs benchmark labels and predictions in both datasets"}
    if prior is not None:
        block["p_value_adjusted"] = prior.test.p_value_adjusted
    estimates = parts.get("estimates") or []
    metric = overall["metric"] if overall else None
    block["estimated_performance"] = {
        "metric": metric, "benchmark_value": overall["benchmark_value"] if overall else None,
        "methods": {e.method: e.to_dict() for e in estimates}}
    _headline(block["estimated_performance"], estimates, metric)
    concept = parts.get("concept")
    block["concept"] = _d(concept)
    if overall and overall.get("production_value") is not None:
        block["observed_performance"] = {
            "metric": overall["metric"], "benchmark_value": overall["benchmark_value"],
            "benchmark_ci": overall["benchmark_ci"], "production_value": overall["production_value"],
            "production_ci": overall["production_ci"], "n_benchmark": overall["n"],
            "n_production": overall["n_production"], "p_value_adjusted": overall["change_p_value_adjusted"],
            "is_shift": bool(overall["changed"]), "excluded_contexts": overall["change_excluded_contexts"]}
    block["is_shift"] = bool(block.get("is_shift")) or bool(concept is not None and concept.is_shift)
    return block


def _headline(target: dict[str, Any], estimates: list[Any], metric: str | None) -> None:
    """Lift each estimator's figure for the primary metric (or accuracy) to ``{estimate, ci}``."""
    for e in estimates:
        keys = [m.key for m in e.metrics]
        key = metric if metric in keys else ("accuracy" if "accuracy" in keys else None)
        if key is None:
            continue
        m = e.get(key)
        target["methods"][e.method].update({"metric": key, "estimate": m.value, "ci_low": m.ci_low,
                                            "ci_high": m.ci_high})
    target["methods"] = to_jsonable(target["methods"])


def semantic_block(context: Any, embedding: Any, attribution: Any, conditional: Any,
                   contexts_only_in_production: tuple[str, ...]) -> dict[str, Any]:
    block = context.to_dict() if context is not None else {"is_shift": False, "contexts": [],
                                                            "untested_contexts": []}
    block["embedding"] = _d(embedding)
    block["attribution"] = _d(attribution)
    block["conditional"] = _d(conditional)
    block["contexts_only_in_production"] = list(contexts_only_in_production)
    block["is_shift"] = bool(block.get("is_shift")) or any(
        r is not None and r.is_shift for r in (embedding, conditional))
    return block


def slices_block(evaluation: Any, titles: dict[str, str]) -> list[dict[str, Any]]:
    if evaluation is None:
        return []
    out = []
    for s in evaluation.slices:
        item = s.to_dict()
        item["title"] = titles.get(s.name)
        item["gap"] = _oriented_gap(evaluation.metric, s.gap_vs_overall)
        out.append(item)
    return out


def _oriented_gap(metric: str, gap_vs_overall: float) -> float | None:
    """overall − slice, so that positive means the slice is worse (lower-is-better flipped)."""
    if gap_vs_overall is None or not np.isfinite(gap_vs_overall):
        return None
    lower_is_better = metric in ("error_rate", "fpr", "false_positive_rate")
    return float(gap_vs_overall if lower_is_better else -gap_vs_overall)


def candidates_frame(production: pd.DataFrame, id_column: str | None, uncertainty: np.ndarray | None,
                     predictions: np.ndarray | None, masks: dict[str, np.ndarray]) -> pd.DataFrame:
    """Production rows the next round may ask to label, with one boolean column per target."""
    ids = production[id_column].to_numpy() if id_column else np.arange(len(production))
    frame = pd.DataFrame({"id": ids, "uncertainty": uncertainty if uncertainty is not None
                          else np.full(len(production), 0.5)})
    if predictions is not None:
        frame["prediction"] = predictions
    for name, mask in masks.items():
        frame[name] = np.asarray(mask, dtype=bool)
    return frame


def untested_masks(production: pd.DataFrame, untested: list[dict[str, Any]],
                   slice_masks: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    masks = {}
    for u in untested:
        name = str(u.get("name"))
        column = u.get("column")
        if column and column in production.columns:
            masks[name] = context_rows(production, column, u.get("value"), str(u.get("kind")))
        elif name in slice_masks:
            masks[name] = slice_masks[name]
    return masks
