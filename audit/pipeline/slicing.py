"""The slice stages of an audit: expert and discovered slices, their metrics and change tests,
untested contexts and the contexts whose share moved."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from audit.engine import exact
from audit.engine.exact import outcomes_exact
from audit.pipeline.columns import column_view
from audit.pipeline.stage_context import Outputs, StageContext
from detectors.discovery import discover_weak_slices
from detectors.pruning import prune_discoveries
from detectors.slices import METRIC_ALIASES, Outcomes, SliceEvaluator
from detectors.within_context import (
    context_strata_cells,
    label_codes,
    make_strata,
    rank_context_columns,
    within_context_change,
)
from domains.expressions import columns_used

MAX_DISCOVERED = 10  # discovered slices reported beside the expert ones (detectors.pruning.MAX_DISCOVERED)
STRATA_MAX_CONTEXTS = 2  # context columns crossed into within-context strata; more makes them too thin


def expert_masks(ctx: StageContext) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], dict[str, str]]:
    """Masks of the pack's slices both datasets can evaluate; the others are named in a note."""
    bench_masks = ctx.pack.slice_masks(ctx.benchmark)
    prod_masks = ctx.pack.slice_masks(ctx.production)
    names = [n for n in bench_masks if n in prod_masks]
    definitions = {s.name: s.expression for s in ctx.pack.slices}
    unevaluated = unevaluated_slices_note(ctx.pack, ctx.benchmark.columns, ctx.production.columns)
    if unevaluated is not None:
        ctx.notes.append(unevaluated)
    return {n: (bench_masks[n], prod_masks[n]) for n in names}, definitions


def unevaluated_slices_note(pack, benchmark_columns, production_columns) -> dict[str, str] | None:
    """The expert slices a column is missing for, said rather than dropped in silence: "not audited"
    is not "fine" (an images-only dermatology upload has no ``modality``, so its smartphone slices
    cannot be measured)."""
    missing: dict[str, set[str]] = {}
    for s in pack.slices:
        absent = {c for c in columns_used(s.ast) if c not in benchmark_columns or c not in production_columns}
        if absent:
            missing[s.name] = absent
    if not missing:
        return None
    columns = sorted(set().union(*missing.values()))
    where = lambda c: ("either dataset" if c not in benchmark_columns and c not in production_columns  # noqa: E731
                       else "the benchmark" if c not in benchmark_columns else "production")
    return {"part": "expert slices", "reason": (
        f"{len(missing)} of the domain pack's {len(pack.slices)} expert slices could not be evaluated, so their "
        f"performance is unknown, not fine: {', '.join(sorted(missing))}. "
        + "; ".join(f"'{c}' is not in {where(c)}" for c in columns)
        + ". Record the column to audit these slices.")}


def discovery(ctx: StageContext, bench: Outputs, prod: Outputs):
    """Weak slices beyond the expert ones, searched where labels exist (production first)."""
    contexts = list(ctx.columns.contexts)
    if not ctx.options.discovery:
        return None, None
    if not contexts:
        ctx.notes.append({"part": "weak-slice discovery", "reason": (
            "did not run: no column has the role 'context'. Discovery searches conditions on context columns "
            "(a domain pack's, or columns given the role 'context' in the upload's schema); features alone are "
            "tested for shift, not searched for weak slices.")})
        return None, None
    frame, data = (ctx.production, prod) if prod.y_true is not None else (ctx.benchmark, bench)
    if data.y_true is None or data.y_pred is None:
        return None, None
    types = {c.name: c.type for c in ctx.pack.context if c.name in contexts}
    errors = data.y_true != data.y_pred
    # bin edges from the benchmark, which a monitor's runs share: the same population, the same key
    reference = column_view(ctx.benchmark, contexts) if all(c in ctx.benchmark.columns for c in contexts) else None
    return discover_weak_slices(column_view(frame, contexts), errors, min_support=ctx.min_slice_size,
                                alpha=ctx.alpha, correction=ctx.correction, column_types=types,
                                reference=reference), errors


def novel_discoveries(ctx: StageContext, discovered, slices: dict[str, tuple[np.ndarray, np.ndarray]],
                      errors: np.ndarray | None, labelled_production: bool, limit: int = MAX_DISCOVERED) -> list:
    """Discovered slices that say something new (policy: :func:`detectors.pruning.prune_discoveries`)."""
    if discovered is None or errors is None:
        return []
    side = 1 if labelled_production else 0
    frame = ctx.production if labelled_production else ctx.benchmark
    return prune_discoveries(discovered, reference=ctx.benchmark, frame=frame, errors=errors,
                             reported=[masks[side] for masks in slices.values()],
                             min_slice_size=ctx.min_slice_size, limit=limit)


def slice_metrics(ctx: StageContext, slices, definitions, sources, bench: Outputs, prod: Outputs, mix=None):
    """Slice metrics and tests, plus the same for all rows ("overall").

    With production labels, the benchmark-to-production change of every slice (and overall) is
    the change that remains after reweighting the benchmark to the production mix of contexts,
    model confidence and classes (:func:`detectors.within_context.within_context_change`), so
    that a change caused by the context mix, covariate or label shift is not called a change
    within context. ``mix`` = (benchmark mask, production mask, names) of contexts
    whose share moved; their names are recorded with the tests.
    """
    if bench.y_true is None or bench.y_pred is None or prod.y_pred is None:
        return None, None
    metric = ctx.pack.primary_metric
    if metric == "auc" and bench.positive_scores is None:
        metric = "balanced_accuracy"  # AUC needs scores; say so through the metric name
    evaluator = SliceEvaluator(metric=metric, positive=getattr(ctx.pack, "positive_class", None), alpha=ctx.alpha,
                               correction=ctx.correction, min_slice_size=ctx.min_slice_size, random_state=ctx.seed)
    outcome_b = Outcomes(bench.y_pred, bench.y_true, bench.positive_scores)
    outcome_p = Outcomes(prod.y_pred, prod.y_true, prod.positive_scores if prod.y_true is not None else None)
    everything = {"overall": (np.ones(len(bench.y_pred), bool), np.ones(len(prod.y_pred), bool))}
    evaluator.fit(outcome_b)
    overall = evaluator.test(outcome_p, slices=everything, definitions={"overall": "all rows"})
    evaluation = evaluator.test(outcome_p, slices=slices, definitions=definitions, sources=sources) \
        if slices else None
    if prod.y_true is not None:
        strata = strata_for(ctx, bench, prod)
        names = list(mix[2]) if mix is not None else []
        overall = _within_context_change(ctx, evaluator, overall, everything, strata, bench, prod, names)
        if evaluation is not None:
            evaluation = _within_context_change(ctx, evaluator, evaluation, slices, strata, bench, prod, names)
    if evaluation is not None and prod.y_true is not None:
        evaluation = _no_change_test_for_discoveries(evaluation, sources)

    if outcomes_exact(ctx) and metric != "auc":  # Dask engine: metrics from every row's counts

        evaluation, overall = exact.slice_metrics(ctx, evaluator, evaluation, overall, dict(definitions))
    return evaluation, overall


def _no_change_test_for_discoveries(evaluation, sources):
    """A slice discovered on the production rows was chosen *because* production errs there, so
    testing its benchmark-to-production change on those same rows would be biased towards
    "worse": that test is withdrawn (the slice's weakness itself is FDR-controlled by discovery)."""
    nan = float("nan")
    tests = [replace(t, p_value=nan, p_value_adjusted=nan, drifted=False, status="not_tested",
                     details={**t.details, "reason": "discovered on these production rows; a change test on "
                                                     "the same rows would be biased"})
             if t.kind == "slice_performance" and sources.get(t.name) == "discovered" else t
             for t in evaluation.tests]
    return evaluation.with_tests(tests)


def strata_for(ctx: StageContext, bench: Outputs, prod: Outputs):
    """Strata for the within-context tests: the most moved context columns x confidence bins
    (computed once per audit: the concept and the slice tests read the same strata)."""
    if "strata" not in ctx.shared:
        ctx.shared["strata"] = _strata(ctx, bench, prod)
    return ctx.shared["strata"]


def _strata(ctx: StageContext, bench: Outputs, prod: Outputs):
    contexts = [c for c in ctx.columns.contexts if c in ctx.benchmark.columns and c in ctx.production.columns]
    columns = rank_context_columns(ctx.benchmark, ctx.production, contexts, limit=STRATA_MAX_CONTEXTS)
    cells = context_strata_cells(ctx.benchmark, ctx.production, columns) if columns else (None, None)
    conf_b = None if bench.proba is None else bench.proba.max(axis=1)
    conf_p = None if prod.proba is None else prod.proba.max(axis=1)
    return make_strata(cells[0], cells[1], confidence_reference=conf_b, confidence_current=conf_p,
                       n_reference=len(ctx.benchmark), n_current=len(ctx.production))


def _within_context_change(ctx, evaluator, evaluation, slices, strata, bench, prod, names):
    """Replace each slice's change test by the reweighted within-context test."""
    metric = METRIC_ALIASES.get(evaluator.metric, evaluator.metric)
    within = {}
    # the labels as integer codes once per audit (the overall and the slice tests read the same
    # codes): every slice's test then compares integers, not text
    if "label_codes" not in ctx.shared:
        ctx.shared["label_codes"] = label_codes(bench.y_true, bench.y_pred, prod.y_true, prod.y_pred,
                                                getattr(ctx.pack, "positive_class", None))
    (yb, pb, yp, pp), positive = ctx.shared["label_codes"]
    for name, (mask_b, mask_p) in slices.items():
        _, test = within_context_change(yb, pb, yp, pp, strata, mask_b=mask_b, mask_p=mask_p, metric=metric,
                                        positive=positive, name=name,
                                        alpha=ctx.alpha, effect_floor=evaluator.effect_floor,
                                        min_samples=min(30, ctx.min_slice_size), pool_thin=not names)
        within[name] = replace(test, details={**test.details, "excluded_contexts": [],
                                              "mix_shifted_contexts": list(names)})
    tests = [within.get(t.name, t) if t.kind == "slice_performance" else t for t in evaluation.tests]
    return evaluation.with_tests(tests)


def merge_untested(ctx: StageContext, context_result, slices):
    """One candidate per untested context: a slice that selects exactly the rows of an unseen or
    rare value (``diffusion_generated`` = ``generator == "diffusion"``) is folded into it, so the
    same rows are tested (and claimed) once."""
    if context_result is None:
        return None
    everything = tuple(context_result.candidates) + tuple(context_result.too_small)
    values = {u.name: context_rows(ctx.production, u.column, u.value, u.kind, u.values) for u in everything
              if u.column is not None and u.column in ctx.production.columns}
    twins = [u.name for u in everything if u.column is None and u.name in slices
             and any(np.array_equal(mask, slices[u.name][1]) for mask in values.values())]
    return context_result.without_candidates(twins) if twins else context_result


def mix_shifted(ctx: StageContext, context_result, slices) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """Rows in contexts whose share moved (slice share test) or that the benchmark lacks (claimed)."""
    if context_result is None:
        return None
    mix_b = np.zeros(len(ctx.benchmark), bool)
    mix_p = np.zeros(len(ctx.production), bool)
    names = []
    for share in context_result.slice_shares:
        if share.test.drifted and share.name in slices:
            mix_b |= slices[share.name][0]
            mix_p |= slices[share.name][1]
            names.append(share.name)
    for u in context_result.untested_contexts:
        if u.column is not None and u.column in ctx.production.columns:
            mix_b |= context_rows(ctx.benchmark, u.column, u.value, u.kind, u.values)
            mix_p |= context_rows(ctx.production, u.column, u.value, u.kind, u.values)
            names.append(u.name)
    return mix_b, mix_p, names


def context_rows(frame: pd.DataFrame, column: str, value, kind: str, values=()) -> np.ndarray:
    """Rows of an untested context: beyond a numeric bound, equal to a category value, or (a pool
    of rare values) any of ``values``; one pass over the column whatever the number of values."""
    if kind in ("below_range", "above_range"):
        x = pd.to_numeric(frame[column], errors="coerce").to_numpy(float)
        with np.errstate(invalid="ignore"):
            return x < value if kind == "below_range" else x > value
    wanted = [str(v) for v in (values if kind == "pooled_values" else (value,))]
    return frame[column].astype(str).isin(wanted).to_numpy()
