"""Label quality from an annotations table ``(item_id, annotator_id, label)``.

* inter-annotator agreement: Krippendorff's alpha for nominal labels, with a bootstrap CI
  over items (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability");
* each annotator's share of the labels, flagged above a cap (default 20 %);
* near-chance ("spam") annotators: agreement with the leave-one-out majority of the other
  annotators, against the agreement expected by chance given the annotator's own label mix
  (permutation test, kappa-style effect);
* disagreement rate per slice of items, with Wilson CIs and a test against the other items;
* agreement between two label sources on the same items (percent agreement + Cohen's kappa).

>>> import pandas as pd
>>> ann = pd.DataFrame({"item_id": [1, 1, 2, 2, 3, 3], "annotator_id": list("ababab"),
...                     "label": ["x", "x", "y", "y", "x", "y"]})
>>> round(krippendorff_alpha(ann, n_bootstrap=0).alpha, 3)
0.444
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd
from scipy import stats

from detectors.base import DetectorInputError, Result
from detectors.concept import two_proportion_pvalue
from detectors.confusion import as_label_array, bootstrap_row_means, confusion_counts, encode, sorted_classes
from detectors.intervals import wilson_interval

__all__ = ["AgreementResult", "AnnotatorShare", "AnnotatorReliability", "SliceDisagreement",
           "SourceAgreement", "krippendorff_alpha", "annotator_shares", "annotator_reliability",
           "disagreement_by_slice", "source_agreement", "LabelQualityResult", "assess_label_quality"]

COLUMNS = ("item_id", "annotator_id", "label")


@dataclass(frozen=True)
class AgreementResult(Result):
    """Krippendorff's alpha (nominal) with a bootstrap CI over items; ``n_items`` counts pairable items."""

    alpha: float
    ci_low: float
    ci_high: float
    observed_disagreement: float
    expected_disagreement: float
    n_items: int
    n_values: int
    n_annotators: int


@dataclass(frozen=True)
class AnnotatorShare(Result):
    annotator: Any
    n_labels: int
    share: float
    ci_low: float
    ci_high: float
    over_cap: bool


@dataclass(frozen=True)
class AnnotatorReliability(Result):
    """Agreement of one annotator with the leave-one-out majority of the others.

    ``kappa = (agreement - chance) / (1 - chance)``; ``p_value`` tests "no better than chance"
    (label permutation). ``near_chance`` when not significant or the kappa CI lies below the floor.
    """

    annotator: Any
    n_items: int
    agreement: float
    agreement_ci: tuple
    chance_agreement: float
    kappa: float
    kappa_ci: tuple
    p_value: float
    near_chance: bool
    status: str = "ok"


@dataclass(frozen=True)
class SliceDisagreement(Result):
    """Share of a slice's multiply-labelled items on which annotators disagree, vs the other items."""

    slice: str
    n_items: int
    n_disagree: int
    rate: float
    ci_low: float
    ci_high: float
    rest_rate: float
    difference: float
    p_value: float


@dataclass(frozen=True)
class SourceAgreement(Result):
    """Agreement of two label sources on the same items (e.g. local vs central review).

    ``symmetry_p_value`` is Bowker's test (McNemar for two classes): small when one source
    systematically moves items towards some class.
    """

    n: int
    agreement: float
    agreement_ci: tuple
    kappa: float
    kappa_ci: tuple
    n_disagree: int
    symmetry_p_value: float
    confusion: dict


def _validated(annotations: pd.DataFrame, columns=COLUMNS) -> pd.DataFrame:
    if not isinstance(annotations, pd.DataFrame):
        raise DetectorInputError("annotations must be a DataFrame with item, annotator and label columns.")
    missing = [c for c in columns if c not in annotations.columns]
    if missing:
        raise DetectorInputError(f"annotations lack columns {missing} (have {list(annotations.columns)[:10]}).")
    frame = annotations[list(columns)]
    bad = frame.isna().any(axis=1).to_numpy()
    if bad.any():
        raise DetectorInputError(f"annotations have missing values in rows {np.flatnonzero(bad)[:5].tolist()}.")
    dup = frame.duplicated(subset=list(columns[:2])).to_numpy()
    if dup.any():
        raise DetectorInputError(f"an annotator labels an item twice (rows {np.flatnonzero(dup)[:5].tolist()}).")
    if len(frame) == 0:
        raise DetectorInputError("annotations are empty.")
    return frame


def _label_counts(frame: pd.DataFrame, columns=COLUMNS):
    """Items, labels, per-item label counts ``(n_items, k)`` and row codes."""
    item_codes, items = pd.factorize(frame[columns[0]], sort=True)
    labels = sorted_classes(frame[columns[2]].to_numpy())
    label_codes = encode(frame[columns[2]].to_numpy(), labels, "label")
    counts = np.bincount(item_codes * len(labels) + label_codes,
                         minlength=len(items) * len(labels)).reshape(len(items), len(labels))
    return items, labels, counts, item_codes, label_codes


def _alpha_from_sums(disagree, marginals) -> np.ndarray:
    """Nominal alpha ``1 - (n - 1) D_o / sum_{c != k} n_c n_k`` from coincidence sums (batched)."""
    n = marginals.sum(-1)
    expected = n**2 - (marginals**2).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected > 0, 1 - (n - 1) * disagree / np.where(expected > 0, expected, 1), np.nan)


def krippendorff_alpha(annotations: pd.DataFrame, *, columns=COLUMNS, n_bootstrap: int = 1000,
                       confidence: float = 0.95, random_state: int | None = 0) -> AgreementResult:
    """Krippendorff's alpha for nominal labels; items with one label are not pairable and skipped.

    The CI resamples items (their coincidences), vectorised with multinomial item weights.
    """
    frame = _validated(annotations, columns)
    _, _, counts, _, _ = _label_counts(frame, columns)
    m = counts.sum(1)
    counts = counts[m >= 2]
    m = m[m >= 2]
    if len(m) == 0:
        raise DetectorInputError("No item has two or more labels: agreement is undefined.")
    disagree = (m**2 - (counts**2).sum(1)) / (m - 1)  # off-diagonal coincidences of each item
    alpha = float(_alpha_from_sums(disagree.sum(), counts.sum(0)))
    n = counts.sum()
    d_o = disagree.sum() / n
    d_e = (n**2 - (counts.sum(0) ** 2).sum()) / (n * (n - 1))
    lo = hi = float("nan")
    if n_bootstrap:
        rng = np.random.default_rng(random_state)
        sums = bootstrap_row_means(np.column_stack([disagree, counts]), n_bootstrap, rng) * len(m)
        reps = _alpha_from_sums(sums[:, 0], sums[:, 1:])
        reps = reps[np.isfinite(reps)]
        if reps.size:
            a = (1 - confidence) / 2
            lo, hi = (float(v) for v in np.quantile(reps, [a, 1 - a]))
    return AgreementResult(alpha, lo, hi, float(d_o), float(d_e), int(len(m)), int(n),
                           int(frame[columns[1]].nunique()))


def annotator_shares(annotations: pd.DataFrame, *, cap: float = 0.2, columns=COLUMNS,
                     confidence: float = 0.95) -> tuple[AnnotatorShare, ...]:
    """Each annotator's share of all labels (Wilson CI), ``over_cap`` when the share exceeds ``cap``."""
    frame = _validated(annotations, columns)
    counts = frame[columns[1]].value_counts()
    n = int(counts.sum())
    lo, hi = wilson_interval(counts.to_numpy(), np.full(len(counts), n), confidence=confidence)
    return tuple(AnnotatorShare(_native(a), int(c), float(c / n), float(low), float(high), bool(c / n > cap))
                 for a, c, low, high in zip(counts.index, counts.to_numpy(), lo, hi))


def _consensus_credit(others: np.ndarray) -> np.ndarray:
    """Credit of each label for agreeing with the majority of ``others`` (ties share the credit)."""
    top = others.max(1, keepdims=True)
    winners = (others == top) & (top > 0)
    return winners / np.maximum(winners.sum(1, keepdims=True), 1)


def annotator_reliability(annotations: pd.DataFrame, *, alpha: float = 0.05, kappa_floor: float = 0.2,
                          min_items: int = 20, n_permutations: int = 999, columns=COLUMNS,
                          confidence: float = 0.95, random_state: int | None = 0) -> tuple[AnnotatorReliability, ...]:
    """Agreement of each annotator with the leave-one-out majority label of the others.

    Chance agreement keeps the annotator's own label mix but breaks its link to the items;
    the p-value permutes the annotator's labels over its items: ``(1 + #{S_b >= S}) / (1 + B)``.
    Annotators with fewer than ``min_items`` comparable items get ``status="insufficient_data"``.
    """
    frame = _validated(annotations, columns)
    _, labels, counts, item_codes, label_codes = _label_counts(frame, columns)
    onehot = np.eye(len(labels))[label_codes]
    credit = _consensus_credit(counts[item_codes] - onehot)  # per annotation row, (rows, k)
    comparable = (counts[item_codes] - onehot).sum(1) > 0
    rng = np.random.default_rng(random_state)
    out = []
    for annotator, rows in frame.groupby(columns[1], sort=True).indices.items():
        rows = rows[comparable[rows]]
        out.append(_one_annotator(_native(annotator), credit[rows], label_codes[rows], alpha=alpha,
                                  kappa_floor=kappa_floor, min_items=min_items, n_permutations=n_permutations,
                                  confidence=confidence, rng=rng))
    return tuple(out)


def _one_annotator(annotator, credit, own, *, alpha, kappa_floor, min_items, n_permutations, confidence, rng):
    n = len(own)
    nan = float("nan")
    if n < max(min_items, 1):
        return AnnotatorReliability(annotator, n, nan, (nan, nan), nan, nan, (nan, nan), nan, False,
                                    "insufficient_data")
    score = credit[np.arange(n), own]
    agreement = float(score.mean())
    mix = np.bincount(own, minlength=credit.shape[1]) / n
    chance = float(mix @ credit.mean(0))
    shuffled = rng.permuted(np.broadcast_to(own, (n_permutations, n)), axis=1)
    permuted = credit[np.arange(n)[None, :], shuffled].mean(1)
    p_value = float((1 + np.sum(permuted >= agreement - 1e-12)) / (1 + n_permutations))
    lo, hi = wilson_interval(score.sum(), n, confidence=confidence)
    denom = 1 - chance if chance < 1 else nan
    kappa, k_lo, k_hi = ((v - chance) / denom for v in (agreement, lo, hi))
    near = bool(p_value >= alpha or k_hi < kappa_floor) if np.isfinite(denom) else True
    return AnnotatorReliability(annotator, n, agreement, (lo, hi), chance, float(kappa), (float(k_lo), float(k_hi)),
                                p_value, near)


def _slice_items(slices, items: pd.Index, frame: pd.DataFrame, columns) -> dict[str, np.ndarray]:
    """Boolean item masks from {name: item ids | row mask} or a Series item -> slice value."""
    if isinstance(slices, pd.Series):
        mapping = slices.reindex(items)
        return {str(v): (mapping == v).to_numpy() for v in pd.unique(mapping.dropna())}
    out = {}
    for name, members in slices.items():
        members = np.asarray(members)
        if members.dtype == bool:
            if len(members) != len(frame):
                raise DetectorInputError(f"slice {name!r}: row mask has {len(members)} rows, annotations {len(frame)}.")
            members = frame[columns[0]].to_numpy()[members]
        out[str(name)] = items.isin(members)
    return out


def disagreement_by_slice(annotations: pd.DataFrame, slices: Mapping | pd.Series, *, columns=COLUMNS,
                          confidence: float = 0.95) -> tuple[SliceDisagreement, ...]:
    """Disagreement rate (items with at least two labels that are not unanimous) per slice of items.

    ``slices``: ``{name: iterable of item ids}``, ``{name: boolean mask over annotation rows}``
    or a Series mapping item id -> slice value. Each slice is compared with the other items.
    """
    frame = _validated(annotations, columns)
    items, _, counts, _, _ = _label_counts(frame, columns)
    multi = counts.sum(1) >= 2
    disagree = (counts.max(1) < counts.sum(1)) & multi
    out = []
    for name, member in _slice_items(slices, items, frame, columns).items():
        inside, rest = member & multi, ~member & multi
        n_in, k_in = int(inside.sum()), int(disagree[inside].sum())
        n_rest, k_rest = int(rest.sum()), int(disagree[rest].sum())
        nan = float("nan")
        lo, hi = wilson_interval(k_in, n_in, confidence=confidence) if n_in else (nan, nan)
        rate = k_in / n_in if n_in else nan
        rest_rate = k_rest / n_rest if n_rest else nan
        p = two_proportion_pvalue(k_rest, n_rest, k_in, n_in)[1] if n_in and n_rest else nan
        out.append(SliceDisagreement(name, n_in, k_in, rate, lo, hi, rest_rate, rate - rest_rate, p))
    return tuple(out)


def source_agreement(labels_a, labels_b, *, confidence: float = 0.95) -> SourceAgreement:
    """Percent agreement (Wilson CI) and Cohen's kappa (large-sample CI) of two aligned label arrays."""
    a, b = as_label_array(labels_a, "labels_a"), as_label_array(labels_b, "labels_b")
    if len(a) != len(b) or len(a) == 0:
        raise DetectorInputError(f"label sources must be non-empty and aligned ({len(a)} vs {len(b)} rows).")
    classes = sorted_classes(a, b)
    cm = confusion_counts(encode(a, classes, "labels_a"), encode(b, classes, "labels_b"), len(classes))
    n = len(a)
    p_o = np.trace(cm) / n
    p_e = float((cm.sum(1) / n) @ (cm.sum(0) / n))
    lo, hi = wilson_interval(np.trace(cm), n, confidence=confidence)
    nan = float("nan")
    kappa = (p_o - p_e) / (1 - p_e) if p_e < 1 else nan
    se = np.sqrt(p_o * (1 - p_o) / n) / (1 - p_e) if p_e < 1 else nan
    z = stats.norm.ppf(0.5 + confidence / 2)
    confusion = {str(ca): {str(cb): int(cm[i, j]) for j, cb in enumerate(classes)} for i, ca in enumerate(classes)}
    return SourceAgreement(n, float(p_o), (lo, hi), float(kappa), (float(kappa - z * se), float(kappa + z * se)),
                           int(n - np.trace(cm)), _bowker(cm), confusion)


def _bowker(cm: np.ndarray) -> float:
    """Bowker's test of symmetry of a square table (McNemar without correction for 2 x 2)."""
    upper, lower = cm[np.triu_indices_from(cm, 1)], cm.T[np.triu_indices_from(cm, 1)]
    keep = (upper + lower) > 0
    if not keep.any():
        return 1.0
    stat = float((((upper - lower) ** 2)[keep] / (upper + lower)[keep]).sum())
    return float(stats.chi2.sf(stat, int(keep.sum())))


def _native(value):
    return value.item() if isinstance(value, np.generic) else value


@dataclass(frozen=True)
class LabelQualityResult(Result):
    """Everything label quality says about one annotations table."""

    agreement: AgreementResult | None
    shares: tuple
    annotators: tuple
    slices: tuple
    cap: float
    over_cap: tuple
    near_chance: tuple
    n_items: int
    n_labels: int


def assess_label_quality(annotations: pd.DataFrame, *, cap: float = 0.2, slices=None, columns=COLUMNS,
                         alpha: float = 0.05, kappa_floor: float = 0.2, min_items: int = 20,
                         confidence: float = 0.95, random_state: int | None = 0) -> LabelQualityResult:
    """Agreement, annotator shares (cap), near-chance annotators and per-slice disagreement in one call.

    ``agreement`` is None when no item carries two labels (nothing to compare).
    """
    frame = _validated(annotations, columns)
    multi = frame.groupby(columns[0]).size().max() >= 2
    agreement = krippendorff_alpha(frame, columns=columns, confidence=confidence,
                                   random_state=random_state) if multi else None
    shares = annotator_shares(frame, cap=cap, columns=columns, confidence=confidence)
    people = annotator_reliability(frame, alpha=alpha, kappa_floor=kappa_floor, min_items=min_items,
                                   columns=columns, confidence=confidence, random_state=random_state) if multi else ()
    per_slice = (disagreement_by_slice(frame, slices, columns=columns, confidence=confidence)
                 if slices is not None else ())
    return LabelQualityResult(agreement, shares, people, per_slice, float(cap),
                              tuple(s.annotator for s in shares if s.over_cap),
                              tuple(r.annotator for r in people if r.near_chance),
                              int(frame[columns[0]].nunique()), int(len(frame)))
