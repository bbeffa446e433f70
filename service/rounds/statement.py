"""The one-sentence statement of where a benchmark series stands, and whether its stall coincides
with falling annotator agreement (label noise can hide real gains: a noisier consensus label
makes a better model look no better)."""
from __future__ import annotations

from typing import Any, Sequence

THEORY = ("sequential rounds can stall after about three, and label noise makes it worse "
          "(Shirali, Abebe and Hardt, 2023)")


def agreement_change(rounds: Sequence[Any], at: int) -> tuple[int, int, float, float, bool] | None:
    """Agreement where the gains stopped against agreement in the latest round.

    ``at`` is the 0-based position dating the stall (the second of two rounds without a gain), so
    the gains stopped after position ``at - 2``: the earlier alpha is the latest one known at or
    before it. Returns ``(from_round, to_round, alpha_from, alpha_to, fell)`` or None when either
    alpha is unknown; ``fell`` when the latest round's 95 % interval lies wholly below the earlier
    round's (a drop sampling noise would rarely give, since the two intervals do not overlap).
    """
    before = [r for r in rounds[: max(at - 1, 1)] if r.annotators.alpha is not None]
    last = rounds[-1]
    if not before or last.annotators.alpha is None or before[-1] is last:
        return None
    first = before[-1]
    a, b = first.annotators, last.annotators
    low = a.alpha_ci_low if a.alpha_ci_low is not None else a.alpha
    high = b.alpha_ci_high if b.alpha_ci_high is not None else b.alpha
    return first.number, last.number, float(a.alpha), float(b.alpha), bool(high < low)


def _ci(est: Any) -> str:
    if est is None or est.ci_low is None:
        return "n/a"
    return f"[{est.ci_low:.2f}, {est.ci_high:.2f}]"


def _stall_part(rounds: Sequence[Any], stalled_at: int, min_gain: float | None) -> str:
    """The stall, with the largest gain the flat rounds cannot rule out (their upper bounds)."""
    flat = [r.improvement for r in rounds if r.number >= stalled_at - 1 and r.improvement is not None
            and r.improvement.ci_high is not None]
    text = f"stalled since round {stalled_at}: two consecutive rounds without a significant gain"
    if min_gain is not None:
        text += f", each ruling out a gain of {min_gain:.2f} or more"
    elif flat:
        text += f" (gains of up to {max(g.ci_high for g in flat):+.2f} a round are not ruled out)"
    return text


def summary_sentence(name: str, metric: str, rounds: Sequence[Any], stalled_at: int | None,
                     saturated: bool, threshold: float, noise: Any = None, *, min_gain: float | None = None) -> str:
    """One sentence (with semicolons) on where the series stands; ``noise`` is the
    :class:`~service.rounds.series.AgreementChange` when the stall coincides with falling agreement."""
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
        parts.append(_stall_part(rounds, stalled_at, min_gain))
    elif min_gain is not None and len(rounds) > 2 and all(
            r.improvement is not None and not r.improvement.significant for r in rounds[-2:]):
        parts.append(f"the last two rounds show no significant gain but cannot rule out a gain of {min_gain:.2f}: "
                     "too few items to call a stall")
    if stalled_at is not None and noise is not None:
        parts.append(f"gains stopped while agreement fell from {noise.alpha_from:.2f} to {noise.alpha_to:.2f} "
                     f"(Krippendorff's alpha, round {noise.from_round} to round {noise.to_round}): "
                     "label noise may hide progress")
    if any(r.number >= 3 and r.improvement is not None and not r.improvement.significant for r in rounds):
        parts.append(f"note that {THEORY}")
    if saturated:
        parts.append(f"saturated: the lower CI bound of {metric} in the last round is at or above {threshold:.2f}, "
                     "so further rounds of the same kind say little")
    return "; ".join(parts) + "."
