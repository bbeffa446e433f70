"""The typed summary of a benchmark series (``GET /v1/benchmarks/{name}``, SPEC §8)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from detectors.base import Result
from service.rounds import annotators as ann
from service.rounds import stats
from service.rounds.coverage import Coverage, plan_allocations, plan_coverage
from service.rounds.frames import RoundTable

DEFAULT_THRESHOLD, DEFAULT_ALPHA = 0.8, 0.05
THEORY = ("sequential rounds can stall after about three, and label noise makes it worse "
          "(Shirali, Abebe and Hardt, 2023)")


@dataclass(frozen=True)
class RoundSummary(Result):
    number: int
    dataset: str
    model: str | None
    plan: str | None
    n: int
    metric: stats.Estimate
    cumulative: stats.Estimate
    mer: stats.Estimate
    vmer: stats.Estimate | None
    improvement: stats.Improvement | None
    annotators: ann.AnnotatorSummary
    agreement_fell: bool
    plan_coverage: tuple[Coverage, ...] | None


@dataclass(frozen=True)
class SeriesSummary(Result):
    name: str
    domain: str
    metric: str
    rounds: tuple[RoundSummary, ...]
    stalled: bool
    stalled_at: int | None
    saturated: bool
    saturation_threshold: float
    alpha: float
    summary: str


@dataclass(frozen=True)
class RoundInput:
    """What the summary needs of one registered round."""

    number: int
    dataset: str
    model: str | None
    plan: str | None
    table: RoundTable
    plan_result: dict[str, Any] | None = None


def _rows(table: RoundTable) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    items = table.items
    scores = items["score"].to_numpy(float) if "score" in items.columns else None
    return items["y"].to_numpy(str), items["y_pred"].to_numpy(str), scores


def summarise_series(name: str, domain: str, pack: Any, rounds: Sequence[RoundInput], *,
                     saturation_threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA) -> SeriesSummary:
    """Per-round metric, cumulative metric, MER/vMER, improvement, annotators and plan coverage,
    then the stall and saturation flags and a one-sentence summary."""
    has_scores = all("score" in r.table.items.columns for r in rounds)
    metric = stats.usable_metric(pack.primary_metric, has_scores)
    positive = pack.positive_class
    rows = [_rows(r.table) for r in rounds]
    estimates = [stats.metric_estimate(metric, *rw, positive=positive) for rw in rows]
    gains: list[stats.Improvement] = [
        stats.improvement(metric, estimates[i - 1], estimates[i], rows[i - 1], rows[i], positive=positive, seed=i)
        for i in range(1, len(rounds))]
    gains = stats.correct_series(gains, alpha=alpha)
    people = [ann.summarise(r.table.annotations, seed=r.number) for r in rounds]
    out = []
    for i, r in enumerate(rounds):
        pooled = pd.concat([x.table.items for x in rounds[: i + 1]], ignore_index=True)
        pooled_rows = (pooled["y"].to_numpy(str), pooled["y_pred"].to_numpy(str),
                       pooled["score"].to_numpy(float) if has_scores else None)
        validated = r.table.items["validated"].to_numpy(bool) if r.table.has_validation else None
        mer, vmer = stats.error_rates(rows[i][0], rows[i][1], validated)
        allocations = plan_allocations(r.plan_result)
        out.append(RoundSummary(
            number=r.number, dataset=r.dataset, model=r.model, plan=r.plan, n=len(r.table.items),
            metric=estimates[i], cumulative=stats.metric_estimate(metric, *pooled_rows, positive=positive),
            mer=mer, vmer=vmer, improvement=gains[i - 1] if i else None, annotators=people[i],
            agreement_fell=bool(i and ann.agreement_fell(people[i - 1], people[i])),
            plan_coverage=plan_coverage(allocations, r.table.items) if r.plan_result is not None else None))
    at = stats.stall([None] + [g.significant for g in gains])
    stalled_at = out[at].number if at is not None else None
    sat = bool(out) and stats.saturated(out[-1].metric, metric, saturation_threshold)
    return SeriesSummary(name, domain, metric, tuple(out), stalled_at is not None, stalled_at, sat,
                         saturation_threshold, alpha, summary_sentence(name, metric, out, stalled_at, sat,
                                                                       saturation_threshold))


def _ci(est: Any) -> str:
    if est is None or est.ci_low is None:
        return "n/a"
    return f"[{est.ci_low:.2f}, {est.ci_high:.2f}]"


def summary_sentence(name: str, metric: str, rounds: Sequence[RoundSummary], stalled_at: int | None,
                     saturated: bool, threshold: float) -> str:
    """One sentence (with semicolons) on where the series stands."""
    if not rounds:
        return f"Benchmark {name!r} has no rounds yet."
    last = rounds[-1]
    value = "n/a" if last.metric.value is None else f"{last.metric.value:.2f}"
    parts = [f"Benchmark {name!r} has {len(rounds)} round{'s' * (len(rounds) != 1)}, {metric} {value} "
             f"{_ci(last.metric)} in round {last.number}"]
    gained = [r for r in rounds if r.improvement is not None and r.improvement.significant]
    if gained:
        g = gained[-1]
        parts.append(f"the last significant gain was round {g.number} ({g.improvement.difference:+.2f} "
                     f"{_ci(g.improvement)})")
    elif len(rounds) > 1:
        parts.append("no round improved significantly on the one before")
    if stalled_at is not None:
        parts.append(f"stalled since round {stalled_at}: two consecutive rounds without a significant gain")
    fell = [r.number for r in rounds if r.agreement_fell and (stalled_at is None or r.number >= stalled_at - 1)]
    if stalled_at is not None and fell:
        parts.append(f"annotator agreement fell in round{'s' * (len(fell) > 1)} {', '.join(map(str, fell))}, "
                     "a likely cause of the stall")
    if any(r.number >= 3 and r.improvement is not None and not r.improvement.significant for r in rounds):
        parts.append(f"note that {THEORY}")
    if saturated:
        parts.append(f"saturated: the lower CI bound of {metric} in the last round is at or above {threshold:.2f}, "
                     "so further rounds of the same kind say little")
    return "; ".join(parts) + "."
