"""Is a covariate shift the class-mix change seen through the inputs?

Under a pure change of the class mix (label shift: ``P(x | y)`` unchanged) every input that depends
on the class moves too, and so do the model's outputs: a class-mix change alone yields "6 of 7
inputs changed". To tell the two apart, the covariate tests are re-run against the benchmark with
the production class mix: the benchmark is subsampled by class, without replacement, to the
production priors ``q`` (the largest sample with exactly those shares, so every row is a real
benchmark row drawn from ``P(x | y)``). A feature whose shift disappears there is explained by the
class mix: not flagged, and either the re-test kept at least half the original test's effective
sample size ``n m / (n + m)`` or its effect size is below the practical floor too, so that a
smaller sample alone cannot explain a shift away. The re-test only decides the grouping; it
claims nothing.

Context-mix changes are checked the same way (:func:`mix_relations`): a slice's or a column's
production share that the benchmark reweighted by ``w_y = q_y / p_y`` reproduces (not significant
and below the floor) is the class mix seen through the contexts.

The production priors are the observed production labels when there are any, else the BBSE
estimate when it is reliable.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from detectors.bbsd import OutputShiftDetector
from detectors.covariate import CovariateShiftDetector
from reports.grouping import Relation
from service.audits.pipeline.columns import column_view, output_columns
from service.audits.pipeline.reweighted_mix import limitation_mix_explained

MIN_CLASS_ROWS = 10  # a class with fewer benchmark rows cannot stand in for its production share


@dataclass(frozen=True)
class ClassMixRetest:
    """Which flagged inputs remain shifted against the benchmark resampled to the production class mix."""

    explained: tuple[str, ...]
    remaining: tuple[str, ...]
    n_benchmark: int  # rows of the class-resampled benchmark
    production_prior: dict
    source: str  # "observed_labels" or "bbse"


def production_prior(state: Any) -> tuple[dict[str, float], str] | None:
    """The production class shares: observed labels first, else a reliable BBSE estimate."""
    prod = state.prod_out
    if prod is not None and prod.y_true is not None:
        values, counts = _text_counts(prod.y_true)
        return {str(v): c / counts.sum() for v, c in zip(values, counts)}, "observed_labels"
    prior = state.prior
    if prior is not None and prior.status == "ok" and prior.reliable:
        return {str(k): float(v) for k, v in prior.priors.items()}, "bbse"
    return None


def _text_counts(labels: np.ndarray) -> tuple[list[str], np.ndarray]:
    """``np.unique(labels.astype(str), return_counts=True)`` from one hash of the rows: the distinct
    labels are counted, then their texts sorted and merged (a million labels are not sorted as text)."""
    codes, distinct = pd.factorize(np.asarray(labels, dtype=object))
    if (codes < 0).any():  # a missing label: its text ('None', 'nan') is np.unique's business
        values, counts = np.unique(np.asarray(labels).astype(str), return_counts=True)
        return [str(v) for v in values], counts
    by_text: dict[str, int] = {}
    for value, count in zip(distinct, np.bincount(codes, minlength=len(distinct))):
        by_text[str(value)] = by_text.get(str(value), 0) + int(count)
    texts = sorted(by_text)
    return texts, np.array([by_text[t] for t in texts], dtype=np.int64)


def class_resampled_rows(y_benchmark: np.ndarray, prior: dict[str, float], seed: int) -> np.ndarray | None:
    """A boolean mask of benchmark rows whose class shares are ``prior`` (the largest such subsample)."""
    y = np.asarray(y_benchmark).astype(str)
    classes = [c for c, q in prior.items() if q > 0]
    counts = {c: int(np.count_nonzero(y == c)) for c in classes}
    if any(counts[c] < MIN_CLASS_ROWS for c in classes):
        return None
    total = min(counts[c] / prior[c] for c in classes)
    rng = np.random.default_rng(seed)
    keep = np.zeros(len(y), bool)
    for c in classes:
        rows = np.flatnonzero(y == c)
        keep[rng.choice(rows, size=min(len(rows), int(round(total * prior[c]))), replace=False)] = True
    return keep


def retest_under_class_mix(state: Any, features: list[str], outputs: list[str]) -> ClassMixRetest | None:
    """Re-run the flagged ``features`` and ``outputs`` tests against the class-resampled benchmark."""
    ctx, bench = state.ctx, state.bench_out
    found = production_prior(state)
    if found is None or bench is None or bench.y_true is None or not (features or outputs):
        return None
    prior, source = found
    keep = class_resampled_rows(bench.y_true, prior, ctx.seed)
    if keep is None or int(keep.sum()) < ctx.min_slice_size:
        return None
    rows = hashlib.sha256(np.packbits(keep)).hexdigest()
    tests, distribution = [], {}
    if features:
        res = ctx.fitted("covariate_class_mix", lambda: CovariateShiftDetector(
            alpha=ctx.alpha, correction=ctx.correction, random_state=ctx.seed).fit(ctx.benchmark.loc[keep, features]),
            columns=features, rows=rows).test(column_view(ctx.production, features))
        tests += [t for t in res.tests if t.name in features]
        distribution.update({t.name: t for t in res.features})
    used = output_columns(ctx, outputs)
    if outputs and used:
        res = ctx.fitted("outputs_class_mix", lambda: OutputShiftDetector(
            alpha=ctx.alpha, correction=ctx.correction, classes=ctx.classes, random_state=ctx.seed).fit(
            ctx.benchmark.loc[keep, used]), columns=used, rows=rows).test(column_view(ctx.production, used))
        tests += list(res.tests)
        distribution.update({t.name: t for t in res.tests})
    names = list(dict.fromkeys(features + outputs))
    # gone: no re-test of the column flags it, and either the re-test kept at least half the original
    # test's effective size (so it is not a lack of rows) or its effect is below the floor as well
    n_b, n_p = len(ctx.benchmark), len(ctx.production)
    powered = _effective(int(keep.sum()), n_p) >= 0.5 * _effective(n_b, n_p)
    gone = {n for n in names if n in distribution and not any(t.drifted for t in tests if t.name == n)
            and (powered or _below_floor(distribution[n]))}
    return ClassMixRetest(tuple(n for n in names if n in gone), tuple(n for n in names if n not in gone),
                          int(keep.sum()), prior, source)


def _effective(n: int, m: int) -> float:
    """The effective size ``n m / (n + m)`` of a two-sample test."""
    return n * m / (n + m) if n + m else 0.0


def _below_floor(test: Any) -> bool:
    effect = test.effect_size
    return effect is not None and bool(np.isfinite(effect)) and effect < test.effect_floor


def class_mix_relations(found: list, relations: list, state: Any) -> list:
    """Fold into the label-shift limitation what the class-mix change explains: the covariate shift
    when every flagged input and output is explained (and nothing else explains it already), and the
    overall metric drop when no per-class metric changed."""
    label = next((lim for lim in found if lim.kind == "label_shift"), None)
    if label is None:
        return []
    taken = {r.child for r in relations}
    out = []
    covariate = next((lim for lim in found if lim.kind == "covariate_shift" and lim.key not in taken), None)
    if covariate is not None:
        features = list(dict.fromkeys(f["name"] for f in covariate.evidence.get("features") or []))
        outputs = [o["name"] for o in covariate.evidence.get("outputs") or []]
        retest = retest_under_class_mix(state, features, outputs)
        if retest is not None and retest.explained and not retest.remaining:
            out.append(Relation(covariate.key, label.key, "class_mix", note=(
                f"against {retest.n_benchmark:,} benchmark rows resampled to the production class mix none of "
                f"{', '.join(retest.explained[:8])} is shifted")))
    concept = state.concept
    overall = next((lim for lim in found if lim.kind == "concept_shift" and lim.slice is None
                    and lim.key not in taken), None)
    per_class = list(getattr(concept, "per_class", None) or ())
    tested = [c.test for c in per_class if getattr(c, "test", None) is not None and c.test.status == "ok"]
    if overall is not None and tested and not any(t.drifted for t in tested):
        out.append(Relation(overall.key, label.key, "class_mix", note=(
            "no per-class metric changed (" + ", ".join(t.name for t in tested[:4]) + "): the overall drop is the "
            "new class mix weighting the classes differently")))
    return out


def _candidate_priors(state: Any, prior: dict[str, float], source: str) -> list[dict[str, float]]:
    """The production class mix, and for a BBSE estimate also the ends of each class's interval (the
    others rescaled): a share the class mix explains at some credible mix is explained."""
    out = [prior]
    if source != "bbse":
        return out
    for c, (lo, hi) in (state.prior.priors_ci or {}).items():
        for end in (lo, hi):
            rest = 1.0 - prior.get(str(c), 0.0)
            if end is None or not np.isfinite(end) or rest <= 0:
                continue
            out.append({k: (float(end) if k == str(c) else v * (1 - float(end)) / rest) for k, v in prior.items()})
    return out


def _weights(state: Any, prior: dict[str, float]) -> np.ndarray | None:
    y = state.bench_out.y_true.astype(str)
    values, counts = np.unique(y, return_counts=True)
    p = dict(zip(values, counts / counts.sum()))
    w = np.array([prior.get(c, 0.0) / p[c] for c in y])
    return w if w.sum() > 0 else None


def mix_relations(found: list, masks: dict, bench_masks: dict, relations: list, state: Any) -> list:
    """Context-mix changes that the class-mix change explains fold into the label-shift limitation: the
    benchmark reweighted to the production class mix (``w_y = q_y / p_y``) has production's share."""
    label = next((lim for lim in found if lim.kind == "label_shift"), None)
    located = production_prior(state)
    if label is None or located is None or state.bench_out is None or state.bench_out.y_true is None:
        return []
    weights = [w for q in _candidate_priors(state, *located) if (w := _weights(state, q)) is not None]
    if not weights:
        return []
    ctx, taken, out = state.ctx, {r.child for r in relations}, []
    for lim in found:
        if lim.kind != "context_mix_shift" or lim.key in taken:
            continue
        if any(limitation_mix_explained(lim, w, masks, bench_masks, ctx) for w in weights):
            out.append(Relation(lim.key, label.key, "class_mix",
                                note="the benchmark reweighted to the production class mix has the production share"))
    return out
