"""The audit's detector stages. Each takes frames and options and returns detector results;
none of them corrects across the audit (that happens once, in :mod:`service.pipeline.family`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from service.pipeline.columns import AuditColumns, class_list, score_matrix

CONDITIONAL_MAX_COLUMNS = 5  # drifted features re-tested within context cells (cost grows per column)
ATTRIBUTION_MAX_CONTEXTS = 2  # context columns crossed into cells; more makes cells too thin
MAX_DISCOVERED = 10  # discovered slices reported beside the expert ones
COVERED_SHARE = 0.8  # "mostly inside": the share of a slice's rows within another one


@dataclass
class Outputs:
    """The model's outputs on one dataset, as the detectors want them."""

    y_true: np.ndarray | None
    y_pred: np.ndarray | None
    proba: np.ndarray | None  # (n, k) in ``classes`` order

    @property
    def positive_scores(self) -> np.ndarray | None:
        return None if self.proba is None or self.proba.shape[1] != 2 else self.proba[:, 1]

    def uncertainty(self) -> np.ndarray | None:
        return None if self.proba is None else 1.0 - self.proba.max(axis=1)


@dataclass
class StageContext:
    benchmark: pd.DataFrame
    production: pd.DataFrame
    columns: AuditColumns
    pack: Any
    options: dict[str, Any]
    classes: list[str] = field(default_factory=list)
    notes: list[dict[str, str]] = field(default_factory=list)  # parts that could not run, and why

    def guard(self, part: str, default: Any, run, *args) -> Any:
        """Run one part of the audit; data it cannot test (a class the benchmark never saw, an
        all-missing column...) skips that part with a note instead of failing the audit."""
        from detectors.base import DetectorInputError

        try:
            return run(*args)
        except DetectorInputError as exc:
            self.notes.append({"part": part, "reason": str(exc)})
            return default

    @property
    def alpha(self) -> float:
        return float(self.options["alpha"])

    @property
    def correction(self) -> str:
        return str(self.options["correction"])

    @property
    def seed(self) -> int:
        return int(self.options["seed"])

    @property
    def min_slice_size(self) -> int:
        return int(self.options.get("min_slice_size") or self.pack.min_slice_size)

    def outputs(self, frame: pd.DataFrame, labelled: bool) -> Outputs:
        cols = self.columns
        proba = score_matrix(frame, cols.scores, self.classes)
        y_pred = frame[cols.prediction].astype(str).to_numpy() if cols.prediction else None
        if y_pred is None and proba is not None:
            y_pred = np.asarray(self.classes, dtype=object)[proba.argmax(axis=1)]
        y_true = frame[cols.label].astype(str).to_numpy() if labelled and cols.label else None
        return Outputs(y_true=y_true, y_pred=y_pred, proba=proba)


def complete_labels(benchmark: pd.DataFrame, production: pd.DataFrame, columns: AuditColumns,
                    notes: list[dict[str, str]]) -> tuple[pd.DataFrame, AuditColumns]:
    """Benchmark rows without a label are left out (a benchmark is labelled data); production
    with some labels missing is treated as unlabelled (the label-free estimates apply)."""
    from dataclasses import replace

    if columns.label and benchmark[columns.label].isna().any():
        missing = int(benchmark[columns.label].isna().sum())
        notes.append({"part": "benchmark labels", "reason": f"{missing:,} benchmark rows have no label and were "
                                                          "left out of the audit."})
        benchmark = benchmark[benchmark[columns.label].notna()].reset_index(drop=True)
    if columns.production_label and production[columns.production_label].isna().any():
        missing = int(production[columns.production_label].isna().sum())
        notes.append({"part": "production labels", "reason": f"{missing:,} of {len(production):,} production rows "
                                                           "have no label, so production is treated as unlabelled "
                                                           "(label-free estimates)."})
        columns = replace(columns, production_label=None)
    return benchmark, columns


def covariate(ctx: StageContext):
    from detectors.classifier_test import ClassifierTwoSampleDetector
    from detectors.covariate import CovariateShiftDetector

    features = list(ctx.columns.features)
    if not features:
        return None, None
    ref, cur = ctx.benchmark[features], ctx.production[features]
    result = CovariateShiftDetector(alpha=ctx.alpha, correction=ctx.correction, random_state=ctx.seed).fit(ref).test(cur)
    tested = [c for c in features if c in {t.name for t in result.features}]
    multivariate = None
    if tested and min(len(ref), len(cur)) >= 50:
        multivariate = ClassifierTwoSampleDetector(alpha=ctx.alpha, random_state=ctx.seed).fit(ref[tested]).test(cur[tested])
    return result, multivariate


def model_outputs(ctx: StageContext):
    from detectors.bbsd import OutputShiftDetector

    cols = ctx.columns
    used = ([cols.prediction] if cols.prediction else []) + list(cols.scores)
    if not used:
        return None
    return OutputShiftDetector(alpha=ctx.alpha, correction=ctx.correction, classes=ctx.classes,
                               random_state=ctx.seed).fit(ctx.benchmark[used]).test(ctx.production[used])


def label(ctx: StageContext, bench: Outputs, prod: Outputs) -> dict[str, Any]:
    """BBSE priors, label-free performance estimates and, with production labels, concept shift."""
    from detectors.concept import ConceptShiftDetector
    from detectors.label_shift import LabelShiftEstimator
    from detectors import ConfidenceBasedEstimator, PriorReweightedEstimator

    out: dict[str, Any] = {}
    if bench.y_true is None or bench.y_pred is None or prod.y_pred is None:
        return out
    positive = getattr(ctx.pack, "positive_class", None)
    out["prior"] = ctx.guard("label shift (BBSE)", None, lambda: LabelShiftEstimator(
        alpha=ctx.alpha, random_state=ctx.seed).fit(bench.y_true, bench.y_pred).estimate(prod.y_pred))
    estimates = [ctx.guard("prior-reweighted performance estimate", None, lambda: PriorReweightedEstimator(
        positive=positive, random_state=ctx.seed).fit(bench.y_true, bench.y_pred).estimate(prod.y_pred))]
    if bench.proba is not None and prod.proba is not None:
        estimates.insert(0, ctx.guard("confidence-based performance estimate", None, lambda: ConfidenceBasedEstimator(
            positive=positive, random_state=ctx.seed).fit(bench.y_true, bench.proba, classes=ctx.classes).estimate(
            prod.proba, prod.y_pred)))
    out["estimates"] = [e for e in estimates if e is not None]
    if prod.y_true is not None:
        out["concept"] = ctx.guard("concept shift", None, lambda: ConceptShiftDetector(
            alpha=ctx.alpha, correction=ctx.correction).fit(bench.y_true, bench.y_pred).test(prod.y_true, prod.y_pred))
    return out


def expert_masks(ctx: StageContext) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], dict[str, str]]:
    bench_masks = ctx.pack.slice_masks(ctx.benchmark)
    prod_masks = ctx.pack.slice_masks(ctx.production)
    names = [n for n in bench_masks if n in prod_masks]
    definitions = {s.name: s.expression for s in ctx.pack.slices}
    return {n: (bench_masks[n], prod_masks[n]) for n in names}, definitions


def discovery(ctx: StageContext, bench: Outputs, prod: Outputs):
    """Weak slices beyond the expert ones, searched where labels exist (production first)."""
    from detectors.discovery import discover_weak_slices

    contexts = list(ctx.columns.contexts)
    if not ctx.options.get("discovery", True) or not contexts:
        return None, None
    frame, data = (ctx.production, prod) if prod.y_true is not None else (ctx.benchmark, bench)
    if data.y_true is None or data.y_pred is None:
        return None, None
    types = {c.name: c.type for c in ctx.pack.context if c.name in contexts}
    errors = data.y_true != data.y_pred
    return discover_weak_slices(frame[contexts], errors, min_support=ctx.min_slice_size,
                                alpha=ctx.alpha, correction=ctx.correction, column_types=types), errors


def novel_discoveries(ctx: StageContext, discovered, slices: dict[str, tuple[np.ndarray, np.ndarray]],
                      errors: np.ndarray | None, labelled_production: bool, limit: int = MAX_DISCOVERED) -> list:
    """Discovered slices that say something new, most excess errors first, up to ``limit``.

    Dropped, because another finding already says it:
    * a condition on a value the benchmark (almost) lacks: the untested-context report covers it;
    * mostly (``COVERED_SHARE``) inside a reported slice and not credibly worse than it (the
      Wilson lower bound of its error rate does not exceed that slice's error rate);
    * weak only because it contains a kept, more specific discovery: without those rows its
      error rate is not credibly above the overall one.
    """
    if discovered is None or errors is None:
        return []
    side = 1 if labelled_production else 0
    frame = ctx.production if labelled_production else ctx.benchmark
    reported = [masks[side] for masks in slices.values()]
    overall = float(errors.mean())
    kept, kept_masks = [], []
    for found in discovered.slices:
        if any(c.mask(ctx.benchmark).sum() < ctx.min_slice_size for c in found.conditions):
            continue
        mask = found.mask(frame)
        if not mask.any() or any(_covered_without_news(mask, other, errors) for other in reported):
            continue
        kept.append(found)
        kept_masks.append(mask)
        reported.append(mask)
    # broad slices come first (more excess errors), so their explaining children are known only now
    explained = {i for i, mask in enumerate(kept_masks)
                 if any(j != i and _explained_by(mask, child, errors, overall) for j, child in enumerate(kept_masks))}
    return [found for i, found in enumerate(kept) if i not in explained][:limit]


def _lower_error_bound(errors: np.ndarray, mask: np.ndarray) -> float:
    from detectors.intervals import wilson_interval

    n = int(mask.sum())
    return wilson_interval(int(errors[mask].sum()), n)[0] if n else 0.0


def _covered_without_news(mask: np.ndarray, other: np.ndarray, errors: np.ndarray) -> bool:
    if (mask & other).sum() < COVERED_SHARE * mask.sum():
        return False
    return _lower_error_bound(errors, mask) <= float(errors[other].mean()) if other.any() else False


def _explained_by(mask: np.ndarray, child: np.ndarray, errors: np.ndarray, overall: float) -> bool:
    if (child & mask).sum() < COVERED_SHARE * child.sum():
        return False  # the kept slice is not inside this one
    rest = mask & ~child
    return not rest.any() or _lower_error_bound(errors, rest) <= overall


def context(ctx: StageContext, slices: dict[str, tuple[np.ndarray, np.ndarray]]):
    from detectors.context import ContextShiftDetector

    contexts = list(ctx.columns.contexts)
    if not contexts and not slices:
        return None
    types = {c.name: c.type for c in ctx.pack.context if c.name in contexts}
    bench = ctx.benchmark[contexts] if contexts else pd.DataFrame(index=ctx.benchmark.index)
    prod = ctx.production[contexts] if contexts else pd.DataFrame(index=ctx.production.index)
    detector = ContextShiftDetector(alpha=ctx.alpha, correction=ctx.correction, min_slice_size=ctx.min_slice_size,
                                    random_state=ctx.seed)
    return detector.fit(bench, column_types=types).test(prod, slices=slices)


def slice_metrics(ctx: StageContext, slices, definitions, sources, bench: Outputs, prod: Outputs, mix=None):
    """Slice metrics and tests, plus the same for all rows ("overall").

    ``mix`` = (benchmark mask, production mask, names) of contexts whose share moved or that
    the benchmark lacks. The benchmark-to-production change of a slice is tested on the slice
    *without* those rows, so that a change caused by the context mix is not called concept
    shift (SPEC §5.3: mix effect versus within-context effect).
    """
    from detectors.slices import Outcomes, SliceEvaluator

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
    overall = evaluator.evaluate(everything, outcome_b, outcome_p, definitions={"overall": "all rows"})
    evaluation = evaluator.evaluate(slices, outcome_b, outcome_p, definitions=definitions, sources=sources) \
        if slices else None
    if mix is not None and prod.y_true is not None and mix[2]:
        overall = _within_context_change(evaluator, overall, everything, mix, outcome_b, outcome_p)
        if evaluation is not None:
            evaluation = _within_context_change(evaluator, evaluation, slices, mix, outcome_b, outcome_p)
    if evaluation is not None and prod.y_true is not None:
        evaluation = _no_change_test_for_discoveries(evaluation, sources)
    return evaluation, overall


def _no_change_test_for_discoveries(evaluation, sources):
    """A slice discovered on the production rows was chosen *because* production errs there, so
    testing its benchmark-to-production change on those same rows would be biased towards
    "worse": that test is withdrawn (the slice's weakness itself is FDR-controlled by discovery)."""
    from dataclasses import replace

    nan = float("nan")
    tests = [replace(t, p_value=nan, p_value_adjusted=nan, drifted=False, status="not_tested",
                     details={**t.details, "reason": "discovered on these production rows; a change test on "
                                                     "the same rows would be biased"})
             if t.kind == "slice_performance" and sources.get(t.name) == "discovered" else t
             for t in evaluation.tests]
    return evaluation.with_tests(tests)


def _within_context_change(evaluator, evaluation, slices, mix, outcome_b, outcome_p):
    """Replace each slice's change test by the same test on the slice minus mix-shifted rows."""
    from dataclasses import replace

    mix_b, mix_p, names = mix
    residual = evaluator.evaluate({n: (b & ~mix_b, p & ~mix_p) for n, (b, p) in slices.items()},
                                  outcome_b, outcome_p)
    within = {t.name: replace(t, details={**t.details, "within_context": True, "excluded_contexts": list(names)})
              for t in residual.tests if t.kind == "slice_performance"}
    tests = [within.get(t.name, t) if t.kind == "slice_performance" else t for t in evaluation.tests]
    return evaluation.with_tests(tests)


def merge_untested(ctx: StageContext, context_result, slices):
    """One entry per untested context: a slice that selects exactly the rows of an unseen or
    rare value (``diffusion_generated`` = ``generator == "diffusion"``) is folded into it."""
    from dataclasses import replace

    if context_result is None:
        return None
    values, merged = {}, []
    for u in context_result.untested_contexts:
        if u.column is not None and u.column in ctx.production.columns:
            values[u.name] = (ctx.production[u.column].astype(str) == str(u.value)).to_numpy()
    for u in context_result.untested_contexts:
        if u.column is None and u.name in slices:
            twin = next((name for name, mask in values.items() if np.array_equal(mask, slices[u.name][1])), None)
            if twin is not None:
                continue
        merged.append(u)
    return replace(context_result, untested_contexts=tuple(merged))


def mix_shifted(ctx: StageContext, context_result, slices) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """Rows in contexts whose share moved (slice share test) or that the benchmark lacks."""
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
            mix_b |= (ctx.benchmark[u.column].astype(str) == str(u.value)).to_numpy()
            mix_p |= (ctx.production[u.column].astype(str) == str(u.value)).to_numpy()
            names.append(u.name)
    return mix_b, mix_p, names


def attribution(ctx: StageContext, context_result, bench: Outputs, prod: Outputs):
    """Mix effect versus within-context effect, on the context columns whose mix moved most."""
    from detectors.attribution import attribute_performance, context_cells

    if context_result is None or bench.y_true is None or not ctx.columns.contexts:
        return None, None
    ranked = sorted((t for t in context_result.contexts if t.status == "ok"), key=lambda t: -(t.effect_size or 0))
    columns = [t.name for t in ranked[:ATTRIBUTION_MAX_CONTEXTS]]
    if not columns:
        return None, None
    cells_b, cells_p, labels = context_cells(ctx.benchmark, ctx.production, columns)
    correct_p = None if prod.y_true is None else (prod.y_true == prod.y_pred).astype(float)
    result = attribute_performance(cells_b, (bench.y_true == bench.y_pred).astype(float), cells_p, correct_p,
                                   labels=labels, min_cell_size=ctx.min_slice_size, random_state=ctx.seed)
    return result, (cells_b, cells_p)


def conditional(ctx: StageContext, covariate_result, cells):
    """Does feature shift remain after reweighting the benchmark to the production context mix?"""
    from detectors.attribution import ConditionalShiftDetector

    if covariate_result is None or cells is None:
        return None
    drifted = [t.name for t in sorted(covariate_result.features, key=lambda t: -(t.effect_size or 0))
               if t.drifted][:CONDITIONAL_MAX_COLUMNS]
    if not drifted:
        return None
    return ConditionalShiftDetector(alpha=ctx.alpha, correction=ctx.correction, random_state=ctx.seed).test(
        ctx.benchmark[drifted], ctx.production[drifted], *cells)


def embedding(ctx: StageContext):
    from detectors.embedding import EmbeddingShiftDetector

    emb = list(ctx.columns.embeddings)
    if not emb:
        return None
    contexts = list(ctx.columns.contexts)
    return EmbeddingShiftDetector(alpha=ctx.alpha, correction=ctx.correction, random_state=ctx.seed).fit(
        ctx.benchmark[emb]).test(ctx.production[emb], context=ctx.production[contexts] if contexts else None)


def label_quality(ctx: StageContext, annotations, slices):
    """Agreement, annotator shares and spam, and disagreement per slice (benchmark items by ``id``)."""
    from detectors.label_quality import COLUMNS, assess_label_quality

    if annotations is None:
        return None
    table, roles = annotations
    by_role = {role: col for col, role in reversed(list(roles.items()))}
    item = "item_id" if "item_id" in table.columns else by_role.get("id")
    annotator, label_col = by_role.get("annotator"), by_role.get("label")
    if not (item and annotator and label_col):
        from detectors.base import DetectorInputError

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
