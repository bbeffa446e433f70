"""Folding keeps a change visible: a standing weakness that absorbs a change about its rows is a change claim."""
from __future__ import annotations

from reports.grouping import Relation, fold
from reports.records import Limitation
from reports.result import Decision


def _lim(kind, key, claim, score, decision=None):
    return Limitation(rank=0, kind=kind, slice=key, title=key, statement=f"{key}.", score=score, severity="low",
                      key=f"{kind}:{key}", claim=claim,
                      decision=decision or Decision(statistic="effect", rule=kind, test=kind))


def test_a_weak_slice_whose_share_grew_is_a_change_claim():
    """Left standing, a weak slice whose share went from 3 % to 18 % of production never alerted."""
    weak = _lim("underperforming_slice", "fitz", "standing", 0.033)
    mix = _lim("context_mix_shift", "fitz", "change", 0.01, Decision(statistic="share", rule="share test",
                                                                        test="z two proportions"))
    (head,) = fold([weak, mix], [Relation(child=mix.key, parent=weak.key, reason="same_rows")])
    assert head.kind == "underperforming_slice" and head.claim == "change"
    assert head.decision.test == "z two proportions" and head.related[0]["kind"] == "context_mix_shift"


def test_standing_stays_standing_without_a_changed_member():
    weak = _lim("underperforming_slice", "fitz", "standing", 0.033)
    inner = _lim("underperforming_slice", "fitz_inner", "standing", 0.01)
    saturated = _lim("benchmark_saturation", "all", "standing", 0.005)
    heads = fold([weak, inner, saturated], [Relation(child=inner.key, parent=weak.key, reason="nested")])
    assert [(h.key, h.claim) for h in heads] == [("underperforming_slice:fitz", "standing"),
                                                 ("benchmark_saturation:all", "standing")]
