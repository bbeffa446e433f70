"""Which of the pack's expert scenarios explains the audit's change claims.

A scenario (:class:`domains.scenarios.Scenario`) predicts signals: a context's mix moves, an input
moves, a class grows, a slice gets worse. Each signal is checked against the audit's own tests:

* **supported** — the test that answers it flagged a change in the predicted direction (or a change
  claim about that slice's rows says the model got worse there);
* **contradicted** — the test ran and found no change, or a change the other way (production labelled
  and the slice no worse);
* **untested** — nothing in the audit answers it (the column is absent, production is unlabelled).

A scenario's score is ``(supported − contradicted) / signals``; it *explains* the change claims whose
subject one of its signals names. The best scenario **fits** when its score is at least one half, it
explains at least one change claim and none of its signals is contradicted; otherwise the audit says
that none of the known scenarios fits.
"""
from __future__ import annotations

from collections.abc import Sequence

from domains import parse
from domains.expressions import columns_used
from domains.scenarios import Scenario, Signal
from reports.formatting import fmt_num, fmt_p, fmt_share, lower_is_better
from reports.result import AuditEvidence, LimitationRecord, ScenarioMatch, ShiftTest, SignalCheck, SliceRecord

__all__ = ["match_scenarios", "FIT_SCORE"]

FIT_SCORE = 0.5


def _columns(definition: str | None) -> set[str]:
    try:
        return set(columns_used(parse(definition))) if definition else set()
    except ValueError:
        return set()


def _direction(before: float | None, after: float | None) -> str | None:
    if before is None or after is None or before == after:
        return None
    return "up" if after > before else "down"


def _judge(sig: Signal, flagged: bool, ran: bool, direction: str | None, what: str) -> SignalCheck:
    if not ran:
        return SignalCheck(signal=sig.describe(), status="untested", evidence=f"{what}: not tested in this audit")
    if flagged and (sig.moves == "changes" or direction == sig.moves):
        return SignalCheck(signal=sig.describe(), status="supported", evidence=what)
    return SignalCheck(signal=sig.describe(), status="contradicted", evidence=what)


def _test_note(t: ShiftTest) -> str:
    return f"{'changed' if t.flagged else 'no change'} ({fmt_p(t.p_value_adjusted, 'adjusted p')})"


def _context(sig: Signal, evidence: AuditEvidence) -> SignalCheck:
    column = str(sig.context)
    if sig.value is not None:
        value = str(sig.value)
        for u in evidence.semantic.untested_contexts:
            if str(u.column) == column and str(u.value) == value and sig.moves in ("up", "changes"):
                return SignalCheck(signal=sig.describe(), status="supported",
                                   evidence=f"{column} = {value} is new in production ({fmt_share(u.production_share)} "
                                            "of it, too rare on the benchmark)")
    test = next((t for t in evidence.semantic.contexts if t.kind == "context" and t.name == column), None)
    if test is None or not test.ran:
        return _judge(sig, False, False, None, f"the mix of {column}")
    if sig.value is None:
        before, after = test.details.get("median_benchmark"), test.details.get("median_production")
        direction = _direction(before, after) if sig.moves != "changes" else None
        moved = f", median {fmt_num(before)} → {fmt_num(after)}" if before is not None and after is not None else ""
        return _judge(sig, test.flagged, True, direction, f"the mix of {column}: {_test_note(test)}{moved}")
    shares = test.details.get("shares") or {}
    pair = shares.get(str(sig.value))
    before, after = (pair if isinstance(pair, (list, tuple)) and len(pair) == 2 else (0.0, 0.0))
    return _judge(sig, test.flagged, True, _direction(before, after),
                  f"{column} = {sig.value}: {fmt_share(before)} → {fmt_share(after)}; the mix of {column} "
                  f"{_test_note(test)}")


def _slice_record(name: str, evidence: AuditEvidence) -> SliceRecord | None:
    return next((s for s in evidence.slices if s.name == name and s.source == "expert"), None)


def _slice(sig: Signal, evidence: AuditEvidence, changes: Sequence[LimitationRecord]) -> SignalCheck:
    name = str(sig.slice)
    record = _slice_record(name, evidence)
    label = (record.title if record and record.title else name)
    if not sig.hurts:
        test = next((t for t in evidence.semantic.contexts if t.kind == "slice_share" and t.name == name), None)
        if test is None or not test.ran:
            return _judge(sig, False, False, None, f"the share of {label}")
        k_b, k_p = test.details.get("k_benchmark"), test.details.get("k_production")
        before = k_b / test.n_reference if k_b is not None and test.n_reference else None
        after = k_p / test.n_current if k_p is not None and test.n_current else None
        return _judge(sig, test.flagged, True, _direction(before, after),
                      f"the share of {label}: {fmt_share(before)} → {fmt_share(after)}, {_test_note(test)}")
    definition = record.definition if record else None
    claim = next((lim for lim in changes if definition and lim.definition == definition
                  and lim.kind in ("concept_shift", "underperforming_slice")), None)
    if claim is not None:
        return SignalCheck(signal=sig.describe(), status="supported", evidence=claim.title)
    if record is None or record.production_value is None or record.benchmark_value is None:
        return _judge(sig, False, False, None, f"the metric on {label} (production unlabelled or too few rows)")
    metric = record.metric or evidence.metric
    worse = (record.production_value > record.benchmark_value if lower_is_better(metric)
             else record.production_value < record.benchmark_value)
    what = (f"{metric} on {label}: {fmt_num(record.benchmark_value)} on the benchmark, "
            f"{fmt_num(record.production_value)} in production")
    if record.changed is True and worse:
        return SignalCheck(signal=sig.describe(), status="supported", evidence=what + " (a significant drop)")
    if worse:
        return SignalCheck(signal=sig.describe(), status="untested", evidence=what + " (not a decided drop)")
    return SignalCheck(signal=sig.describe(), status="contradicted", evidence=what + " (no worse)")


def _feature(sig: Signal, evidence: AuditEvidence) -> SignalCheck:
    name = str(sig.feature)
    test = next((t for t in evidence.covariate.features if t.name == name), None)
    if test is None or not test.ran:
        return _judge(sig, False, False, None, f"the input {name}")
    before, after = test.details.get("mean_reference"), test.details.get("mean_current")
    moved = f", mean {fmt_num(before)} → {fmt_num(after)}" if before is not None and after is not None else ""
    return _judge(sig, test.flagged, True, _direction(before, after), f"the input {name}: {_test_note(test)}{moved}")


def _label(sig: Signal, evidence: AuditEvidence) -> SignalCheck:
    label, name = evidence.label, str(sig.label)
    before = label.benchmark_prior.get(name)
    if label.observed_prior:
        after, source = label.observed_prior.get(name), "observed"
    else:
        estimate = label.production_prior_estimate.get(name)
        after, source = (estimate.estimate if estimate else None), "estimated"
    ran = label.status == "ok" and (label.p_value is not None or label.observed_test is not None)
    return _judge(sig, bool(label.is_shift), ran, _direction(before, after),
                  f"the share of {name}: {fmt_share(before)} → {fmt_share(after)} ({source}); the class mix "
                  f"{'changed' if label.is_shift else 'did not change'}")


def _check(sig: Signal, evidence: AuditEvidence, changes: Sequence[LimitationRecord]) -> SignalCheck:
    if sig.context is not None:
        return _context(sig, evidence)
    if sig.slice is not None:
        return _slice(sig, evidence, changes)
    if sig.feature is not None:
        return _feature(sig, evidence)
    return _label(sig, evidence)


def _concerns(sig: Signal, lim: LimitationRecord, slice_definitions: dict[str, str]) -> bool:
    """Does the change claim ``lim`` (or a claim it absorbed) concern the signal's subject?"""
    subjects = [lim.key, *(r.get("key", "") for r in lim.related)]
    definitions = [lim.definition, *(r.get("key", "").split(":", 1)[-1] for r in lim.related)]
    if sig.context is not None:
        return any(sig.context in _columns(d) for d in definitions if d) or \
            any(k.endswith(f"column {sig.context}") for k in subjects)
    if sig.slice is not None:
        definition = slice_definitions.get(sig.slice)
        return definition is not None and any(_columns(d) and _columns(d) <= _columns(definition)
                                              for d in definitions if d)
    if sig.feature is not None:
        return lim.kind == "covariate_shift" and any(f.get("name") == sig.feature for f in
                                                     lim.evidence.get("features") or [])
    return lim.kind == "label_shift"


def match_scenarios(scenarios: Sequence[Scenario], evidence: AuditEvidence,
                    limitations: Sequence[LimitationRecord]) -> list[ScenarioMatch]:
    """Every declared scenario checked against the audit, best first; empty when nothing changed."""
    changes = [lim for lim in limitations if lim.claim == "change"]
    if not scenarios or not changes:
        return []
    slice_definitions = {s.name: s.definition for s in evidence.slices if s.definition}
    matches = []
    for scenario in scenarios:
        checks = [_check(sig, evidence, changes) for sig in scenario.signals]
        supported = sum(c.status == "supported" for c in checks)
        contradicted = sum(c.status == "contradicted" for c in checks)
        score = (supported - contradicted) / len(checks)
        explains = [lim.key for lim in changes
                    if any(_concerns(sig, lim, slice_definitions) for sig, c in zip(scenario.signals, checks)
                           if c.status == "supported")]
        matches.append(ScenarioMatch(name=scenario.name, title=scenario.title, cause=scenario.cause,
                                     action=scenario.action, reference=scenario.reference, score=round(score, 3),
                                     fits=False, signals=checks, explains=explains))
    matches.sort(key=lambda m: (-m.score, -len(m.explains), m.name))
    best = matches[0]
    if best.score >= FIT_SCORE and best.explains and not any(c.status == "contradicted" for c in best.signals):
        matches[0] = best.model_copy(update={"fits": True})
    return matches
