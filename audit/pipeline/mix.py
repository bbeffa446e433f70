"""Mix versus within-context: how much of a performance change the context mix explains
(attribution, in the pack's primary metric) and whether feature shift remains once the benchmark
is reweighted to the production context mix (the context-conditional test)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from audit.pipeline.columns import column_view
from audit.pipeline.stage_context import Outputs, StageContext
from detectors.attribution import attribute_performance, context_cells
from detectors.conditional import ConditionalShiftDetector

CONDITIONAL_MAX_COLUMNS = 5  # drifted features re-tested within context cells (cost grows per column)
ATTRIBUTION_MAX_CONTEXTS = 2  # context columns crossed into cells; more makes cells too thin


def attribution(ctx: StageContext, context_result, bench: Outputs, prod: Outputs):
    """Mix effect versus within-context effect, on the context columns whose mix moved most."""
    if context_result is None or bench.y_true is None or not ctx.columns.contexts:
        return None, None
    ranked = sorted((t for t in context_result.contexts if t.status == "ok"), key=lambda t: -(t.effect_size or 0))
    columns = [t.name for t in ranked[:ATTRIBUTION_MAX_CONTEXTS]]
    if not columns:
        return None, None
    bench_ctx, prod_ctx = pool_rare_values(ctx.benchmark, ctx.production, columns, ctx.min_slice_size)
    cells_b, cells_p, labels = context_cells(bench_ctx, prod_ctx, columns)
    metric, rows_b, values_b = metric_rows(ctx.pack, bench)
    _, rows_p, values_p = metric_rows(ctx.pack, prod)
    result = attribute_performance(cells_b[rows_b], values_b, cells_p[rows_p], values_p, labels=labels, metric=metric,
                                   min_cell_size=ctx.min_slice_size, random_state=ctx.seed)
    return result, (cells_b, cells_p)


POOLED = "<other values>"  # the cell of a column's rare values (as in the context-mix chi-square)


def pool_rare_values(benchmark, production, columns, min_count: int):
    """The ``columns`` of both frames with each category value that has fewer than ``min_count``
    rows in the two together replaced by ``"<other values>"``: crossing two columns of 3,000
    values each would make tens of thousands of one-row cells (and a bootstrap over all of them);
    pooled, the cells are the values that can be evaluated plus one "other" cell per column. The
    choice looks at the pooled counts only, so it is the same under any relabelling of rows."""
    # views: a pooled column is replaced in the view, the caller's frames are never written
    bench, prod = column_view(benchmark, columns), column_view(production, columns)
    for c in columns:
        numeric = pd.api.types.is_numeric_dtype(bench[c]) and not pd.api.types.is_bool_dtype(bench[c])
        if numeric and bench[c].nunique(dropna=True) > 12:
            continue  # binned at benchmark quantiles by context_cells
        counts = pd.concat([bench[c], prod[c]], ignore_index=True).value_counts(dropna=True)
        small = counts.index[counts.to_numpy() < min_count]
        if len(small) < 2:
            continue
        for frame in (bench, prod):
            frame[c] = frame[c].astype(object).where(~frame[c].isin(small), POOLED)
    return bench, prod


# the pack's metrics that are a mean over some rows: (rows it is measured on, value of a row)
_ROW_METRICS = {
    "accuracy": (lambda t, p, pos: None, lambda t, p, pos: t == p),
    "error_rate": (lambda t, p, pos: None, lambda t, p, pos: t != p),
    "sensitivity": (lambda t, p, pos: t == pos, lambda t, p, pos: p == pos),
    "specificity": (lambda t, p, pos: t != pos, lambda t, p, pos: p != pos),
    "fpr": (lambda t, p, pos: t != pos, lambda t, p, pos: p == pos),
    "precision": (lambda t, p, pos: p == pos, lambda t, p, pos: t == pos),
}


def metric_rows(pack: Any, out: Outputs) -> tuple[str, np.ndarray, np.ndarray | None]:
    """(metric, rows, per-row values) for a mix-versus-within attribution in the pack's primary
    metric; metrics that are not a mean over rows (AUC, balanced accuracy, F1) fall back to
    accuracy, under that name. Unlabelled rows: the rows are selected by the prediction where the
    metric needs the truth (sensitivity, specificity), which assumes each context's class mix did
    not change; the values are unknown (None)."""
    metric = getattr(pack, "primary_metric", "accuracy")
    pos = getattr(pack, "positive_class", None)
    if metric not in _ROW_METRICS or (metric != "accuracy" and metric != "error_rate" and pos is None):
        metric = "accuracy"
    select, value = _ROW_METRICS[metric]
    if out.y_true is None:
        rows = select(out.y_pred, out.y_pred, str(pos))
        return metric, (np.ones(out.n_rows, bool) if rows is None else np.asarray(rows, bool)), None
    rows = select(out.y_true, out.y_pred, str(pos))
    rows = np.ones(out.n_rows, bool) if rows is None else np.asarray(rows, bool)
    return metric, rows, np.asarray(value(out.y_true, out.y_pred, str(pos)), float)[rows]


def conditional(ctx: StageContext, covariate_result, cells):
    """Does feature shift remain after reweighting the benchmark to the production context mix?"""
    if covariate_result is None or cells is None:
        return None
    drifted = [t.name for t in sorted(covariate_result.features, key=lambda t: -(t.effect_size or 0))
               if t.drifted][:CONDITIONAL_MAX_COLUMNS]
    if not drifted:
        return None
    cells_b, cells_p = cells
    return ConditionalShiftDetector(alpha=ctx.alpha, correction=ctx.correction, random_state=ctx.seed).fit(
        column_view(ctx.benchmark, drifted), cells_b).test(column_view(ctx.production, drifted), cells_p)
