"""The typed summary of a benchmark series (``GET /v1/benchmarks/{name}``).

Everything a round publishes (its metric, its improvement test, the level it was tested at, its
decision, and the stall as it stood after it) is computed from that round and the rounds before
it only: the series' metric is fixed by its first round, bootstrap seeds by round position, and
levels by the earlier decisions (LORD++). Stored rounds never change, so recomputing a series
from its rounds gives every earlier round the same published values, whatever came after.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from detectors.base import Result
from service.rounds import annotators as ann, stats
from service.rounds.coverage import Coverage, plan_allocations, plan_coverage
from service.rounds.frames import RoundTable
from service.rounds.schemas import DEFAULT_MIN_GAIN
from service.rounds.statement import agreement_change, summary_sentence

DEFAULT_THRESHOLD, DEFAULT_ALPHA = 0.8, 0.05
PROCEDURE = ("one-sided improvement test of each round over the one before, at a level fixed from the earlier "
             "rounds' decisions (LORD++ online false-discovery-rate control; a published decision never changes)")


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
    stalled_at: int | None = None  # the series' stall date as published when this round arrived


@dataclass(frozen=True)
class StallEpisode(Result):
    """A stall: dated at round ``since``; ``ended`` is the round whose significant gain ended it."""

    since: int
    ended: int | None


@dataclass(frozen=True)
class AgreementChange(Result):
    """Krippendorff's alpha where the gains stopped and in the latest round; ``fell`` when the
    latest round's 95 % interval lies wholly below the earlier round's."""

    from_round: int
    to_round: int
    alpha_from: float
    alpha_to: float
    fell: bool


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
    procedure: str = PROCEDURE
    stalls: tuple[StallEpisode, ...] = ()
    agreement_change: AgreementChange | None = None
    label_noise: bool = False
    min_gain: float | None = None


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


def _estimate(metric: str, rows, positive) -> stats.Estimate:
    if metric == "auc" and rows[2] is None:  # the series is on AUC but this round has no scores
        return stats.Estimate(None, None, None, len(rows[0]), method="bootstrap")
    return stats.metric_estimate(metric, *rows, positive=positive)


def _cumulative(metric: str, rows: Sequence[tuple], positive) -> stats.Estimate:
    scored = all(r[2] is not None for r in rows)
    pooled = (np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows]),
              np.concatenate([r[2] for r in rows]) if scored else None)
    return _estimate(metric, pooled, positive)


def summarise_series(name: str, domain: str, pack: Any, rounds: Sequence[RoundInput], *,
                     saturation_threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA,
                     min_gain: float | None = DEFAULT_MIN_GAIN) -> SeriesSummary:
    """Per-round metric, cumulative metric, MER/vMER, improvement and decision, annotators and plan
    coverage, then the stall and saturation flags and a one-sentence summary.

    The metric is the pack's primary one, fixed by the first round (AUC only when the first round
    has scores), so that a later round cannot change what the earlier rounds measured. With
    ``min_gain``, a stall starts only on rounds whose interval rules out a gain of that size, so
    that rounds too small to see a real gain are not read as a stall.
    """
    has_scores = bool(rounds) and "score" in rounds[0].table.items.columns
    metric = stats.usable_metric(pack.primary_metric, has_scores)
    positive = pack.positive_class
    rows = [_rows(r.table) for r in rounds]
    estimates = [_estimate(metric, rw, positive) for rw in rows]
    gains: list[stats.Improvement] = [
        stats.improvement(metric, estimates[i - 1], estimates[i], rows[i - 1], rows[i], positive=positive, seed=i)
        for i in range(1, len(rounds))]
    gains = stats.decide_online(gains, alpha=alpha)
    decisions = [None] + [g.significant for g in gains]
    ruled = None if min_gain is None else [True] + [stats.gain_ruled_out(g, metric, min_gain) for g in gains]
    people = [ann.summarise(r.table.annotations, seed=r.number) for r in rounds]
    out = []
    for i, r in enumerate(rounds):
        validated = r.table.items["validated"].to_numpy(bool) if r.table.has_validation else None
        mer, vmer = stats.error_rates(rows[i][0], rows[i][1], validated)
        allocations = plan_allocations(r.plan_result)
        at = stats.stall(decisions[: i + 1], None if ruled is None else ruled[: i + 1])
        out.append(RoundSummary(
            number=r.number, dataset=r.dataset, model=r.model, plan=r.plan, n=len(r.table.items),
            metric=estimates[i], cumulative=_cumulative(metric, rows[: i + 1], positive),
            mer=mer, vmer=vmer, improvement=gains[i - 1] if i else None, annotators=people[i],
            agreement_fell=bool(i and ann.agreement_fell(people[i - 1], people[i])),
            plan_coverage=plan_coverage(allocations, r.table.items) if r.plan_result is not None else None,
            stalled_at=None if at is None else rounds[at].number))
    at = stats.stall(decisions, ruled)
    stalled_at = out[at].number if at is not None else None
    episodes = tuple(StallEpisode(out[a].number, None if b is None else out[b].number)
                     for a, b in stats.stall_episodes(decisions, ruled))
    change = None
    if at is not None:
        found = agreement_change(out, at)
        change = None if found is None else AgreementChange(*found)
    noise = bool(change is not None and change.fell)
    sat = bool(out) and stats.saturated(out[-1].metric, metric, saturation_threshold)
    summary = summary_sentence(name, metric, out, stalled_at, sat, saturation_threshold,
                               change if noise else None, min_gain=min_gain)
    return SeriesSummary(name, domain, metric, tuple(out), stalled_at is not None, stalled_at, sat,
                         saturation_threshold, alpha, summary, PROCEDURE, episodes, change, noise, min_gain)
