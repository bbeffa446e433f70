"""The audit's detector stages. Each takes frames and options and returns detector results;
none of them corrects across the audit (that happens once, in :mod:`audit.pipeline.family`)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from audit.engine import exact
from audit.pipeline.columns import AuditColumns, class_list, column_view
from audit.pipeline.slicing import strata_for
from audit.pipeline.stage_context import Outputs, StageContext
from detectors import ConfidenceBasedEstimator, PriorReweightedEstimator
from detectors.assumptions import class_conditional_unexplained, label_shift_unexplained
from detectors.base import DetectorInputError
from detectors.bbsd import OutputShiftDetector
from detectors.classifier_test import ClassifierTwoSampleDetector
from detectors.concept import ConceptShiftDetector
from detectors.context import ContextShiftDetector
from detectors.covariate import CovariateShiftDetector
from detectors.embedding import EmbeddingShiftDetector
from detectors.label_quality import COLUMNS, assess_label_quality
from detectors.label_shift import LabelShiftEstimator
from detectors.within_context import covered_rows, stratified_expected

__all__ = ["Outputs", "StageContext", "complete_labels", "covariate", "model_outputs", "label", "context", "embedding",
           "label_quality", "resolve_classes"]


def complete_labels(benchmark: pd.DataFrame, production: pd.DataFrame, columns: AuditColumns,
                    notes: list[dict[str, str]], partial: bool = True) -> tuple[pd.DataFrame, AuditColumns]:
    """Benchmark rows without a label are left out (a benchmark is labelled data). A production label
    column with no value at all is no label (the label-free estimates apply); one filled on some rows
    keeps them (``partial``: the pipeline measures those rows, :mod:`audit.pipeline.labelled_rows`),
    else production is treated as unlabelled."""
    if columns.label and benchmark[columns.label].isna().any():
        missing = int(benchmark[columns.label].isna().sum())
        notes.append({"part": "benchmark labels", "reason": f"{missing:,} benchmark rows have no label and were "
                                                          "left out of the audit."})
        benchmark = benchmark[benchmark[columns.label].notna()].reset_index(drop=True)
    label = columns.production_label
    if label and production[label].isna().any():
        missing = int(production[label].isna().sum())
        if missing < len(production) and partial:
            return benchmark, columns
        reason = (f"'{label}' is empty on every production row, so production is treated as unlabelled "
                  "(label-free estimates)." if missing == len(production) else
                  f"{missing:,} of {len(production):,} production rows have no label, and this engine measures "
                  "every row or none, so production is treated as unlabelled (label-free estimates).")
        notes.append({"part": "production labels", "reason": reason})
        columns = replace(columns, production_label=None)
    return benchmark, columns


def covariate(ctx: StageContext):
    features = list(ctx.columns.features)
    if not features:
        return None, None
    ref, cur = column_view(ctx.benchmark, features), column_view(ctx.production, features)
    if ctx.summaries is not None:
        result = exact.covariate(ctx, features)
    else:
        detector = ctx.fitted("covariate", lambda: CovariateShiftDetector(
            alpha=ctx.alpha, correction=ctx.correction, random_state=ctx.seed).fit(ref), columns=features)
        result = detector.test(cur)
    ctx.covariate_result = result
    tested = [c for c in features if c in {t.name for t in result.features}]
    multivariate = None
    if tested and min(len(ref), len(cur)) >= 50:
        multivariate = ClassifierTwoSampleDetector(alpha=ctx.alpha, random_state=ctx.seed).fit(
            column_view(ref, tested)).test(column_view(cur, tested))
    return result, multivariate


def model_outputs(ctx: StageContext):
    cols = ctx.columns
    used = ([cols.prediction] if cols.prediction else []) + list(cols.scores)
    if not used:
        return None
    detector = ctx.fitted("outputs", lambda: OutputShiftDetector(
        alpha=ctx.alpha, correction=ctx.correction, classes=ctx.classes if len(ctx.classes) >= 2 else None,
        # one class seen: the output columns' names come from the data
        random_state=ctx.seed).fit(column_view(ctx.benchmark, used)), columns=used)
    return detector.test(column_view(ctx.production, used))


def label(ctx: StageContext, bench: Outputs, prod: Outputs) -> dict[str, Any]:
    """BBSE priors, label-free performance estimates and, with production labels, concept shift."""
    out: dict[str, Any] = {}
    if bench.y_true is None or bench.y_pred is None or prod.y_pred is None:
        return out
    positive = getattr(ctx.pack, "positive_class", None)
    if ctx.summaries is not None and ctx.columns.prediction:  # Dask engine: BBSE on every row's confusion counts

        out["prior"] = ctx.guard("label shift (BBSE)", None, exact.label_prior, ctx)
    else:
        out["prior"] = ctx.guard("label shift (BBSE)", None, lambda: ctx.fitted("bbse", lambda: LabelShiftEstimator(
            alpha=ctx.alpha, random_state=ctx.seed).fit(bench.y_true, bench.y_pred)).estimate(prod.y_pred))
    estimates = [ctx.guard("prior-reweighted performance estimate", None, lambda: ctx.fitted(
        "prior_reweighted", lambda: PriorReweightedEstimator(positive=positive, random_state=ctx.seed).fit(
            bench.y_true, bench.y_pred)).estimate(prod.y_pred))]
    if bench.proba is not None and prod.proba is not None:
        # the costly one: its fit draws the benchmark half of the bootstrap (isotonic refits)
        estimates.insert(0, ctx.guard("confidence-based performance estimate", None, lambda: ctx.fitted(
            "confidence_based", lambda: ConfidenceBasedEstimator(positive=positive, random_state=ctx.seed).fit(
                bench.y_true, bench.proba, classes=ctx.classes)).estimate(prod.proba, prod.y_pred)))
    out["estimates"] = [e for e in estimates if e is not None]
    if out.get("prior") is not None:
        out["prior"] = _check_bbse(ctx, out["prior"], bench, prod)
    if prod.y_true is not None:
        expected, rows = _expected_performance(ctx, bench, prod)
        out["concept"] = ctx.guard("concept shift", None, lambda: ConceptShiftDetector(
            alpha=ctx.alpha, correction=ctx.correction).fit(bench.y_true, bench.y_pred).test(
            prod.y_true, prod.y_pred, expected=expected, expected_rows=rows))
    return out


def _expected_performance(ctx: StageContext, bench: Outputs, prod: Outputs):
    """What production performance would be without concept shift: the benchmark reweighted to the
    production mix of contexts, model confidence (covariate shift as the model sees it) and
    classes (label shift) - :func:`detectors.within_context.stratified_expected`. A label-free
    estimate alone is not enough: confidence-based estimates assume P(y | x) fixed, which label
    shift and a moved mix of contexts the model does not see both break."""
    strata = strata_for(ctx, bench, prod)  # rows in contexts the benchmark lacks are untested, not compared
    return (stratified_expected(bench.y_true, bench.y_pred, prod.y_true, strata, confidence=0.95),
            covered_rows(bench.y_true, strata))


def _check_bbse(ctx: StageContext, prior, bench: Outputs, prod: Outputs):
    """Flag the BBSE priors when covariate shift the label shift cannot explain was found
    (BBSE assumes P(x | y) fixed), and attach observed production class shares if labelled."""
    if prod.y_true is not None:
        codes, values = pd.factorize(prod.y_true, sort=True)  # np.unique's sorted classes, hashed not sorted
        counts = np.bincount(codes, minlength=len(values))
        if ctx.summaries is not None:  # every row's labels, not the sample's
            values, counts = ctx.summaries.label_counts()
        prior = prior.with_observed_prior({str(v): c / counts.sum() for v, c in zip(values, counts)})
    cov = ctx.covariate_result
    if cov is None or not cov.drifted or prior.status != "ok":
        return prior
    if prod.y_true is not None:  # labelled: test P(x | y) class by class, not the marginal through estimated weights
        unexplained = class_conditional_unexplained(ctx.benchmark, bench.y_true, ctx.production, prod.y_true,
                                                    cov.drifted, alpha=ctx.alpha)
        what = "the inputs of a class differ from the benchmark's in"
    else:
        unexplained = label_shift_unexplained(ctx.benchmark, bench.y_true, ctx.production, prior.weights, cov.drifted)
        what = "covariate shift that the estimated class mix does not explain was found in"
    if not unexplained:
        return prior
    names = ", ".join(f"{u.name} ({u.method} {u.statistic:.2f} > {u.threshold:.2f})" for u in unexplained[:5])
    reason = (f"BBSE assumes that the inputs of each class are distributed as in the benchmark, but {what} "
              f"{names}; the estimated production class shares are unreliable.")
    return prior.with_assumption_check(reliable=False, reason=reason)


def context(ctx: StageContext, slices: dict[str, tuple[np.ndarray, np.ndarray]], definitions=None):
    contexts = list(ctx.columns.contexts)
    if not contexts and not slices:
        return None
    types = {c.name: c.type for c in ctx.pack.context if c.name in contexts}
    bench = column_view(ctx.benchmark, contexts) if contexts else pd.DataFrame(index=ctx.benchmark.index)
    prod = column_view(ctx.production, contexts) if contexts else pd.DataFrame(index=ctx.production.index)
    detector = ctx.fitted("context", lambda: ContextShiftDetector(
        alpha=ctx.alpha, correction=ctx.correction, min_slice_size=ctx.min_slice_size, random_state=ctx.seed).fit(
        bench, column_types=types), columns=contexts, types=types)
    if ctx.summaries is not None:  # Dask engine: the categorical and slice-share tests on every row's counts

        return detector.test(prod, slices=slices, counts=exact.context_counts(ctx, detector, definitions or {}, slices))
    return detector.test(prod, slices=slices)


def embedding(ctx: StageContext):
    emb = list(ctx.columns.embeddings)
    if not emb:
        return None
    contexts = list(ctx.columns.contexts)
    detector = ctx.fitted("embedding", lambda: EmbeddingShiftDetector(
        alpha=ctx.alpha, correction=ctx.correction, random_state=ctx.seed).fit(column_view(ctx.benchmark, emb)),
        columns=emb)
    return detector.test(column_view(ctx.production, emb),
                         context=column_view(ctx.production, contexts) if contexts else None)


def label_quality(ctx: StageContext, annotations, slices):
    """Agreement, annotator shares and spam, and disagreement per slice (benchmark items by ``id``)."""
    if annotations is None:
        return None
    table, roles = annotations
    by_role = {role: col for col, role in reversed(list(roles.items()))}
    item = "item_id" if "item_id" in table.columns else by_role.get("id")
    annotator, label_col = by_role.get("annotator"), by_role.get("label")
    if not (item and annotator and label_col):
        raise DetectorInputError("annotations need an item column ('item_id' or role id), an annotator column "
                                 "('annotator_id') and a label column ('label').")
    frame = table[[item, annotator, label_col]].set_axis(list(COLUMNS), axis=1)
    item_slices = None
    if ctx.columns.id is not None and slices:
        ids = ctx.benchmark[ctx.columns.id].to_numpy()
        item_slices = {name: ids[masks[0]] for name, masks in slices.items()}
    return assess_label_quality(frame, slices=item_slices, random_state=ctx.seed)


def resolve_classes(ctx: StageContext) -> list[str]:
    cols = ctx.columns
    series = [ctx.benchmark[c] for c in (cols.label, cols.prediction) if c]
    return class_list(ctx.pack, *series)
