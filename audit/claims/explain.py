"""Explained away, once: one rule for every kind of change claim.

Change claims are accepted one at a time, causes first. At each step:

1. every candidate not yet accepted is re-tested against the benchmark adjusted on the causes
   accepted so far (:func:`audit.claims.adjustment.adjust`); one that is no longer a change
   (not significant, or below its practical floor) is part of the cause just accepted and folds
   into it ("explains: …"), never a claim of its own;
2. of those still standing, the next cause is the one that, added to the accepted ones, explains
   the most of the others (a claim measured on a variable the cause matches directly does not count:
   matching the model's outputs restates every test on them); ties go to the larger share of the
   others' effects removed, then to the kind more often a cause
   (:data:`audit.claims.candidates.PRIORITY`: a new population, the class mix, a located change, a moved
   mix, the inputs), then to severity.

So a pure class-mix change is one label-shift claim (the inputs, the contexts and every slice's
metric move with the classes, and reweighting the benchmark to the production class mix removes
them all), a new population absorbs the columns its rows bring, and a tilted input absorbs the
contexts cut from it, whatever order the detectors reported them in.

A claim whose own re-test on the unadjusted data is not a change (the re-test is cruder than the
detector that made the claim) is never explained away by an adjustment that leaves most of its
effect in place: only one that removes at least half of it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from audit.claims.adjustment import Adjusted, adjust
from audit.claims.candidates import Candidate
from audit.claims.data import ClaimData
from detectors.reweighted import Retest
from reports.formatting import fmt_num, fmt_p
from reports.grouping import Relation

__all__ = ["explain_away", "Step"]

MAX_SELECTED = 10  # candidates that compete to be a cause (by severity); the others are only re-tested
UNEXPLAINED = 0.5  # a re-test the unadjusted data does not confirm must lose at least this share of its effect


@dataclass(frozen=True)
class Step:
    """One accepted cause and the candidates it explained, for the audit's evidence."""

    key: str
    explained: tuple[str, ...]


def _multiplier(cand: Candidate, base: list[Retest], n_tests: int) -> float:
    """The correction the audit's family applied to the claim, carried over to its re-tests: the claim's
    adjusted p-value over its unadjusted re-test's (at least 1, at most the family's size). A claim that
    passed at the family's level must still pass at it, not at the raw level, to stand beside a cause."""
    decision = cand.lim.decision
    adjusted = decision.p_value_adjusted if decision is not None else None
    raw = min((t.p_value for t in base if t.status == "ok" and np.isfinite(t.p_value)), default=None)
    if adjusted is None or raw is None or raw <= 0:
        return 1.0
    return float(np.clip(adjusted / raw, 1.0, max(1, n_tests)))


def _still(cand: Candidate, tests: list[Retest], base: list[Retest], alpha: float, n_tests: int) -> bool:
    if not tests:
        return True  # nothing to re-test (a joint classifier test alone): it stands
    multiplier = _multiplier(cand, base, n_tests)
    for test, before, direction in zip(tests, base, cand.directions):
        if test.changed(alpha=alpha, multiplier=multiplier, direction=direction):
            return True
        if not before.changed(alpha=alpha, direction=direction) and _kept(test, before):
            return True  # the re-test never confirmed it: only a large removal of its effect explains it
    return False


def _kept(test: Retest, before: Retest) -> bool:
    if test.status != "ok" or before.status != "ok" or not np.isfinite(before.effect_size):
        return test.status == "ok"
    b = abs(before.effect_size)
    # signed: an adjustment that reverses the difference removed all of it
    return b > 0 and test.effect_size * np.sign(before.effect_size) > (1 - UNEXPLAINED) * b


def _removed(tests: list[Retest], base: list[Retest]) -> float:
    """The share of a candidate's effect an adjustment removes (mean over its components)."""
    shares = []
    for test, before in zip(tests, base):
        b = abs(before.effect_size) if before.status == "ok" and np.isfinite(before.effect_size) else 0.0
        if b <= 0:
            continue
        ok = test.status == "ok" and np.isfinite(test.effect_size)
        after = test.effect_size * np.sign(before.effect_size) if ok else 0.0
        shares.append(float(np.clip(1 - after / b, 0.0, 1.0)))
    return float(np.mean(shares)) if shares else 0.0


def _note(tests: list[Retest], cause: str) -> str:
    usable = [t for t in tests if t.status == "ok" and np.isfinite(t.effect_size)]
    if not usable:
        return f"with production adjusted for {cause} too few rows remain to tell it apart"
    worst = max(usable, key=lambda t: abs(t.effect_size) / max(t.effect_floor, 1e-9))
    return (f"with production adjusted for {cause} it is {fmt_num(abs(worst.effect_size))} "
            f"(floor {fmt_num(worst.effect_floor)}, {fmt_p(worst.p_value, 'p')})")


def explain_away(cands: list[Candidate], data: ClaimData) -> tuple[list[Relation], list[Step]]:
    """Relations folding each explained candidate into the accepted cause that explains it, and the
    accepted causes in the order they were accepted."""
    if len(cands) < 2:
        return [], [Step(c.key, ()) for c in cands]
    n_b, n_p, alpha = data.n_benchmark, data.n_production, data.alpha
    identity = adjust(n_b, n_p, [])
    base = {c.key: c.retest(identity) for c in cands}
    order = sorted(cands, key=lambda c: -c.lim.score)
    competing = {c.key for c in order[:MAX_SELECTED]}
    accepted: list[Candidate] = []
    remaining = list(cands)
    relations: list[Relation] = []
    steps: list[Step] = []
    while remaining:
        if accepted:
            adjusted = adjust(n_b, n_p, [a.cause for a in accepted if a.cause is not None])
            survivors, explained = [], []
            for cand in remaining:
                tests = cand.retest(adjusted)
                if _still(cand, tests, base[cand.key], alpha, data.n_tests):
                    survivors.append(cand)
                    continue
                head = accepted[-1]
                relations.append(Relation(cand.key, head.key, "adjusted", note=_note(tests, head.lim.title)))
                explained.append(cand.key)
            steps[-1] = Step(steps[-1].key, steps[-1].explained + tuple(explained))
            remaining = survivors
        if not remaining:
            break
        best = max(remaining, key=lambda c: _gain(c, accepted, remaining, base, data, competing))
        accepted.append(best)
        steps.append(Step(best.key, ()))
        remaining = [c for c in remaining if c is not best]
    return relations, steps


def _gain(cand: Candidate, accepted: list[Candidate], remaining: list[Candidate], base: dict, data: ClaimData,
          competing: set[str]) -> tuple:
    """How much ``cand``, accepted next, would explain: (others explained, effect removed, kind, severity).
    A claim measured on a variable the cause matches directly is not counted: matching the model's outputs
    reproduces every test on them, which explains nothing."""
    if cand.cause is None or cand.key not in competing:
        return (0, 0.0, -cand.priority, cand.lim.score)
    adjusted = adjust(data.n_benchmark, data.n_production,
                      [a.cause for a in accepted if a.cause is not None] + [cand.cause])
    count, removed = 0, 0.0
    for other in remaining:
        if other is cand or other.compares & cand.cause.matched:
            continue  # matching what the other is measured on restates it; it does not explain it
        tests = other.retest(adjusted)
        if not _still(other, tests, base[other.key], data.alpha, data.n_tests):
            count += 1
        removed += _removed(tests, base[other.key])
    return (count, round(removed, 3), -cand.priority, cand.lim.score)


def adjusted_for(accepted: list[Candidate], data: ClaimData) -> Adjusted:
    """The benchmark adjusted on ``accepted`` causes (for callers that re-test something else)."""
    return adjust(data.n_benchmark, data.n_production, [a.cause for a in accepted if a.cause is not None])
