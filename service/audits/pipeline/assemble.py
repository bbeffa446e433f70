"""Builds the AuditResult from the corrected audit state; ``reports.result`` types it."""
from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd

from detectors import metric_registry
from detectors.base import to_jsonable
from detectors.context import literal_text
from service.audits.pipeline.bbse_trust import trusted_prior
from reports.records import SeverityPriors
from reports.selection import has_duplicates

MISSING_VALUE = "<missing>"  # how the context detector names a missing category
IMAGE_PATH = "image_path"  # the column an image upload keeps for each row's image (service.datasets.images.intake.PATH_COLUMN)


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
    # The model's outputs are inputs to its decisions: for image domains without tabular features
    # they are the main covariate signal (BBSD), so a flagged output test is a covariate shift.
    block["is_shift"] = bool(block["is_shift"] or any(r is not None and r.is_shift for r in (multivariate, outputs)))
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
    block["observed_prior"] = dict(concept.production_prior) if concept is not None else None
    observed_test = getattr(concept, "label_test", None)
    block["observed_test"] = _d(observed_test)
    if overall and overall.get("production_value") is not None:
        block["observed_performance"] = {
            "metric": overall["metric"], "benchmark_value": overall["benchmark_value"],
            "benchmark_ci": overall["benchmark_ci"], "production_value": overall["production_value"],
            "production_ci": overall["production_ci"], "n_benchmark": overall["n"],
            "n_production": overall["n_production"], "p_value_adjusted": overall["change_p_value_adjusted"],
            "is_shift": bool(overall["changed"]), "excluded_contexts": overall["change_excluded_contexts"]}
    # The label section answers "did the class mix change?": with production labels the observed
    # label test decides; without them, BBSE's. A change of P(y|x) is concept shift, reported apart.
    if observed_test is not None and observed_test.status == "ok":
        block["is_shift"] = bool(observed_test.drifted)
        block["decided_by"] = "observed_labels"
    else:
        # an estimate whose premise the audit contradicts claims nothing (the reason is kept beside it)
        block["is_shift"] = bool(block.get("is_shift")) and block.get("reliable") is not False
        block["decided_by"] = "bbse" if prior is not None else None
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
                   contexts_only_in_production: tuple[str, ...], discovered: frozenset = frozenset()) -> dict[str, Any]:
    """The ``semantic`` section. A discovered slice's share test stays in the family and in the evidence,
    but alone it does not make the section's ``is_shift``: the slice's boundaries were chosen on these
    rows, and null audits on real tables read "a shift was detected" with nothing to claim."""
    block = context.to_dict() if context is not None else {"is_shift": False, "contexts": [],
                                                            "untested_contexts": []}
    if context is not None:
        block["is_shift"] = any(t.drifted for t in context.tests
                                if not (t.kind == "slice_share" and t.name in discovered))
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
        # One headline p-value per slice: its benchmark→production change test when that ran, else
        # the test of its gap to the rest (discovered slices are not change-tested on their own rows).
        if item.get("p_value_adjusted") is None or item["p_value_adjusted"] != item["p_value_adjusted"]:
            item["p_value"], item["p_value_adjusted"] = item.get("gap_p_value"), item.get("gap_p_value_adjusted")
            item["p_value_test"] = "gap"
        else:
            item["p_value_test"] = "change"
        out.append(item)
    return out


def _oriented_gap(metric: str, gap_vs_overall: float) -> float | None:
    """overall − slice, so that positive means the slice is worse (lower-is-better flipped)."""
    if gap_vs_overall is None or not np.isfinite(gap_vs_overall):
        return None
    return float(gap_vs_overall if metric_registry.lower_is_better(metric) else -gap_vs_overall)


def candidates_frame(production: pd.DataFrame, id_column: str | None, uncertainty: np.ndarray | None,
                     predictions: np.ndarray | None, masks: dict[str, np.ndarray]) -> pd.DataFrame:
    """Production rows the next round may ask to label, with one boolean column per target."""
    ids = production[id_column].to_numpy() if id_column else np.arange(len(production))
    frame = pd.DataFrame({"id": ids, "uncertainty": uncertainty if uncertainty is not None
                          else np.full(len(production), 0.5)})
    if predictions is not None:
        frame["prediction"] = predictions
    if IMAGE_PATH in production.columns:  # an image upload: the plan names each row's image
        frame["image"] = production[IMAGE_PATH].to_numpy()
    for name, mask in masks.items():
        frame[name] = np.asarray(mask, dtype=bool)
    # an id names one item to label: a repeated id (the same item twice, or partitions that number
    # their rows independently) is offered once
    return frame.drop_duplicates("id") if id_column and has_duplicates(frame["id"]) else frame


def untested_definition(u: Any, slice_definitions: dict[str, str]) -> str | None:
    """The slice expression selecting exactly the rows of an untested context."""
    if u.kind in ("unseen_slice", "rare_slice"):
        return slice_definitions.get(u.name)
    if u.column is None:
        return None
    column = u.column if u.column.isidentifier() else f"`{u.column}`"
    if u.kind == "below_range":
        return f"{column} < {literal_text(u.value)}"
    if u.kind == "above_range":
        return f"{column} > {literal_text(u.value)}"
    if u.kind == "pooled_values":  # lists the most frequent values (u.other_values holds the rest)
        return f"{column} in [{', '.join(literal_text(v) for v in u.value)}]"
    if u.value == MISSING_VALUE:
        return f"{column} is missing"
    return f"{column} == {literal_text(u.value)}"


def _untested_list(context: Any, definitions: dict[str, str], measured_by: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for u in (context.untested_contexts if context is not None else ()):
        item = u.to_dict()
        item["definition"] = untested_definition(u, definitions)
        item["measured_by"] = measured_by.get(u.name, u.name)  # the slice whose metric describes these rows
        out.append(item)
    return out


def target_masks(limitations: list, state: Any) -> dict[str, np.ndarray]:
    """Production rows of every next-round target: slices and untested contexts, by name."""
    from domains import evaluate

    masks = {name: m[1] for name, m in state.slices.items()}
    wanted = [(lim.slice, lim.definition) for lim in limitations if lim.slice is not None and lim.definition]
    # an untested context (e.g. a pooled group of new values) is a plan target even when no limitation names it
    wanted += [(u.name, untested_definition(u, state.definitions))
               for u in (state.context.untested_contexts if state.context is not None else ())]
    for name, definition in wanted:
        if name in masks or not definition:
            continue
        try:
            masks[name] = evaluate(definition, state.ctx.production).to_numpy()
        except (ValueError, KeyError):
            continue
    return masks


def plain(draft: dict[str, Any]) -> dict[str, Any]:
    """Plain JSON values (no NaN, no numpy): PostgreSQL's JSON and strict encoders refuse them."""
    return to_jsonable(draft)


def audit_title(inp: Any) -> str:
    pack_title = getattr(inp.pack, "title", None) or inp.pack.name
    if inp.title:
        return inp.title
    b = inp.benchmark_ref.get("name") or inp.benchmark_ref.get("id")
    p = inp.production_ref.get("name") or inp.production_ref.get("id")
    return f"{pack_title}: {b} vs {p}"


def audit_json(inp: Any, state: Any) -> dict[str, Any]:
    """The AuditResult before ranking: every section from the corrected detector results."""
    from service.audits.pipeline.distributions import feature_distributions

    ctx = state.ctx
    columns = ctx.columns
    overall = overall_block(state.overall_eval)
    covariate = covariate_block(state.covariate, state.multivariate, state.outputs)
    drifted = [t["name"] for t in covariate.get("features", []) if t.get("drifted")]
    covariate["distributions"] = feature_distributions(ctx.benchmark, inp.production, drifted[:12]) if drifted else {}
    prior = trusted_prior(ctx, state.prior, state.context, state.embedding)
    label_parts = {"prior": prior, "concept": state.concept, "estimates": state.estimates}
    semantic = semantic_block(state.context, state.embedding, state.attribution, state.conditional,
                              columns.contexts_only_in_production,
                              frozenset(n for n, source in state.sources.items() if source == "discovered"))
    semantic["untested_contexts"] = _untested_list(state.context, state.definitions, state.measured_by)
    # candidates that are not claimed (too few rows, within chance, too small a share): kept, with the reason
    semantic["not_claimed_contexts"] = [{**u.to_dict(), "definition": untested_definition(u, state.definitions)}
                                        for u in getattr(state.context, "not_claimed_contexts", ())]
    pack = inp.pack
    return {
        "id": inp.audit_id, "status": "succeeded", "created_at": datetime.now(timezone.utc).isoformat(),
        "title": audit_title(inp), "domain": pack.name, "domain_title": getattr(pack, "title", None) or pack.name,
        "synthetic": bool(inp.benchmark.attrs.get("synthetic") or inp.production.attrs.get("synthetic")),
        "benchmark": {**inp.benchmark_ref, "n_rows": _n_rows(ctx, "benchmark", len(ctx.benchmark))},
        "production": {**inp.production_ref, "n_rows": _n_rows(ctx, "production", len(inp.production)),
                       "labelled": columns.production_label is not None},
        "overall": overall,
        "covariate": covariate,
        "label": label_block(label_parts, overall),
        "semantic": semantic,
        "slices": slices_block(state.evaluation, {s.name: s.title for s in pack.slices if s.title}),
        "label_quality": _d(state.label_quality),
        "discovery": None if state.discovered is None else {
            k: v for k, v in state.discovered.to_dict().items() if k != "slices"},
        "columns": columns.to_dict(),
        "parameters": {**ctx.options, "domain_pack": pack.name, "domain_pack_version": getattr(pack, "version", None),
                       "primary_metric": pack.primary_metric, "min_slice_size": ctx.min_slice_size,
                       "n_tests_corrected": state.n_tests, "classes": ctx.classes,
                       "severity_priors": asdict(SeverityPriors()), "engine": _engine(ctx)},
        "notes": ctx.notes,
    }


def _n_rows(ctx: Any, side: str, in_memory: int) -> int:
    """Rows of the whole dataset: the Dask engine audits a sample of them."""
    return in_memory if ctx.summaries is None else int(getattr(ctx.summaries, side).n_rows)


def _engine(ctx: Any) -> dict[str, Any]:
    if ctx.summaries is None:
        return {"name": "pandas"}
    from service.audits.engine.exact import describe

    from service.audits.engine.exact import outcomes_exact

    return describe(dict(ctx.summaries.description), outcomes_exact=outcomes_exact(ctx))
