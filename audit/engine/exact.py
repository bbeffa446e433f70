"""The Dask engine's stand-ins: stage results recomputed from exact counts and sketches.

The pipeline first runs every stage on the uniform samples (so every section exists and has the
same type as on the pandas engine); the functions here then replace what the summaries can
compute exactly: the per-feature covariate tests (counts; KLL sketches for numeric columns) and
the slice and overall metrics with their CIs and slice-versus-rest tests (confusion counts of
every row). The within-context change tests, discovery, the classifier and MMD tests stay on the
sample (``parameters.engine`` lists both).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from audit.engine.counts import ALL_ROWS, OutcomeCounts
from detectors.column_types import infer_column_types
from detectors.confusion import sorted_classes
from detectors.context import MISSING, ContextCounts
from detectors.outcome_summaries import ConfusionSummary, PredictionSummary
from detectors.sketch_tests import summary_covariate, summary_label_shift

EXACT_PARTS = ("row counts", "per-feature covariate tests (categorical counts, missing-value counts, numeric "
               "columns with at most 5,000 distinct values from their exact value counts)",
               "slice and overall metrics with their CIs and slice-versus-rest tests",
               "label-shift (BBSE) estimate, with Poisson-bootstrap intervals of the counts",
               "observed production class shares",
               "categorical context tests, unseen context values and slice shares")
SKETCHED_PARTS = ("numeric covariate tests of columns with more than 5,000 distinct values (KS on KLL sketches, "
                  "p-value at the sketch's lower bound)",)
SAMPLED_PARTS = ("multivariate classifier test", "model-output shift", "label-free performance estimates",
                 "numeric context tests", "weak-slice discovery", "within-context change tests",
                 "attribution", "embedding tests", "feature histograms", "next-round candidates")


OUTCOME_PARTS = EXACT_PARTS[2:4]  # need a prediction column: counts of (label, prediction) pairs


def describe(base: dict[str, Any], *, outcomes_exact: bool = True) -> dict[str, Any]:
    """``parameters.engine``: which parts were exact, sketched or sampled. Without a prediction
    column the (label, prediction) counts are not kept, so metrics and BBSE use the sample."""
    exact = [p for p in EXACT_PARTS if outcomes_exact or p not in OUTCOME_PARTS]
    sampled = list(SAMPLED_PARTS) + ([] if outcomes_exact else list(OUTCOME_PARTS))
    return {**base, "exact": exact, "sketched": list(SKETCHED_PARTS), "sampled": sampled}


def outcomes_exact(ctx) -> bool:
    """Are this audit's (label, prediction) counts usable? They need a prediction column (a
    prediction derived from scores exists only on the sample)."""
    return ctx.summaries is not None and ctx.columns.prediction is not None


def covariate(ctx, features: list[str]):
    """Per-feature tests from the summaries, typed as the pandas engine types the benchmark."""
    scans = ctx.summaries
    types = infer_column_types(ctx.benchmark[features])
    reference, current = {}, {}
    for name in features:
        pair = _summaries(scans, name, numeric=name in types.numeric)
        if pair is not None:
            reference[name], current[name] = pair
    return summary_covariate(reference, current, n_reference=scans.benchmark.n_rows,
                             n_current=scans.production.n_rows, alpha=ctx.alpha, correction=ctx.correction,
                             random_state=ctx.seed)


def _summaries(scans, name: str, *, numeric: bool):
    b, p = scans.benchmark, scans.production
    if numeric and name in b.numeric and name in p.numeric:
        return b.numeric[name], p.numeric[name]
    if name in b.categories and name in p.categories:
        return b.categories[name], p.categories[name]
    if b.discrete.get(name) is not None and p.discrete.get(name) is not None:
        return b.discrete[name], p.discrete[name]
    if name in b.numeric and name in p.numeric:  # too many values for counts: compare distributions
        return b.numeric[name], p.numeric[name]
    return None


def slice_metrics(ctx, evaluator, evaluation, overall, definitions: dict[str, str]):
    """Slice and overall metrics from the confusion counts of every row."""
    scans = ctx.summaries
    labelled = ctx.columns.production_label is not None
    all_b, all_p = scans.outcomes(ALL_ROWS)
    if overall is not None:
        overall = _exact(evaluator, overall, {"overall": (all_b, all_p)}, all_b, all_p, labelled)
    if evaluation is not None:
        names = [s.name for s in evaluation.slices]
        known = {n: scans.outcomes(n) for n in names if n in scans.benchmark.outcomes}
        missing = {n: definitions[n] for n in names if n not in known and definitions.get(n)}
        known.update(scans.count_slices(missing))
        evaluation = _exact(evaluator, evaluation, known, all_b, all_p, labelled)
    return evaluation, overall


def _exact(evaluator, evaluation, counts: dict, all_b, all_p, labelled: bool):
    classes = evaluator.classes_
    cm_all_b = all_b.confusion(classes)
    cm_all_p = all_p.confusion(classes) if labelled else None
    est_all_b = evaluator.estimate_counts(cm_all_b)
    est_all_p = evaluator.estimate_counts(cm_all_p) if labelled else None
    n_b, n_p = int(cm_all_b.sum()), all_p.n
    slices, gaps = [], {}
    for s in evaluation.slices:
        if s.name not in counts:
            slices.append(s)
            continue
        sb, sp = counts[s.name]
        cm_b = sb.confusion(classes)
        cm_p = sp.confusion(classes) if labelled else None
        est_b = evaluator.estimate_counts(cm_b)
        est_p = evaluator.estimate_counts(cm_p) if labelled else None
        # production's own counts when it is labelled, else the benchmark's
        inside, everything = (cm_p, cm_all_p) if cm_p is not None and cm_all_p is not None else (cm_b, cm_all_b)
        gap = evaluator.test_counts(s.name, "slice_gap", everything - inside, inside)
        value, overall_value = (est_p, est_all_p) if est_p is not None and est_all_p is not None else (est_b, est_all_b)
        nan = float("nan")
        gaps[s.name] = gap
        slices.append(replace(
            s, n_benchmark=int(cm_b.sum()), n_production=sp.n, benchmark_value=est_b.value,
            benchmark_ci=(est_b.ci_low, est_b.ci_high), production_value=est_p.value if est_p else nan,
            production_ci=(est_p.ci_low, est_p.ci_high) if est_p else (nan, nan),
            benchmark_share=int(cm_b.sum()) / max(n_b, 1), production_share=sp.n / max(n_p, 1),
            gap_vs_overall=value.value - overall_value.value, gap_vs_rest=gap.details.get("difference", nan),
            gap_ci=gap.details.get("difference_ci", (nan, nan)),
            status="ok" if gap.status == "ok" else "insufficient_data",
            metric_n_benchmark=int(est_b.n), metric_n_production=int(est_p.n) if est_p else 0))
    tests = [gaps.get(t.name, t) if t.kind == "slice_gap" else t for t in evaluation.tests]
    exact = replace(evaluation, overall_benchmark=est_all_b, overall_production=est_all_p, slices=tuple(slices))
    return exact.with_tests(tests)


BBSE_REPLICATES = 200  # Poisson-bootstrap replicates of the counts behind the BBSE intervals


def label_prior(ctx):
    """BBSE from the benchmark's confusion counts and production's predicted-class counts of every
    row, with Poisson-bootstrap intervals (:mod:`audit.engine.counts`)."""
    bench, prod = ctx.summaries.outcomes(ALL_ROWS)
    classes = sorted_classes(np.array(sorted(bench.classes() | prod.classes()), dtype=object)).tolist()
    cm, predicted = bench.confusion(classes), prod.predicted(classes)
    seed = ctx.seed
    reps_b = OutcomeCounts.poisson_replicates(cm, n_bootstrap=BBSE_REPLICATES, random_state=seed)
    reps_p = OutcomeCounts.poisson_replicates(predicted, n_bootstrap=BBSE_REPLICATES, random_state=seed + 1)
    return summary_label_shift(ConfusionSummary(tuple(classes), cm, reps_b),
                               PredictionSummary(tuple(classes), predicted, reps_p), alpha=ctx.alpha,
                               random_state=seed)


def context_counts(ctx, detector, definitions: dict[str, str], slices: dict):
    """:class:`detectors.context.ContextCounts` of every row, or None (then the sample decides)
    when a categorical context column had too many values to count."""
    scans = ctx.summaries
    columns = [c for c, kind in detector.column_types_.items() if kind == "categorical"]
    sides = []
    for scan, sample in ((scans.benchmark, ctx.benchmark), (scans.production, ctx.production)):
        counts = {}
        for name in columns:
            summary = scan.categories.get(name) or scan.discrete.get(name)
            if summary is None:
                return None
            series = _typed(summary.to_series(), sample[name])
            counts[name] = pd.concat([series, pd.Series({MISSING: summary.n_missing})]) if summary.n_missing else series
        sides.append(counts)
    outcomes = {n: scans.outcomes(n) for n in slices if n in scans.benchmark.outcomes}
    outcomes.update(scans.count_slices({n: definitions[n] for n in slices if n not in outcomes and n in definitions}))
    if set(outcomes) != set(slices):
        return None
    return ContextCounts(sides[0], sides[1], scans.benchmark.n_rows, scans.production.n_rows,
                         {n: (b.n, p.n) for n, (b, p) in outcomes.items()})


def _typed(counts, sample_column):
    """Counts keyed by the column's own values (1, not "1"), as the sample's counts would be."""
    if pd.api.types.is_bool_dtype(sample_column):
        counts.index = [key == "True" for key in counts.index]
    elif pd.api.types.is_numeric_dtype(sample_column):
        numbers = pd.to_numeric(pd.Series(counts.index), errors="coerce")
        integral = pd.api.types.is_integer_dtype(sample_column) or bool((numbers.dropna() % 1 == 0).all())
        counts.index = [int(v) if integral and v == v else v for v in numbers]
    return counts
