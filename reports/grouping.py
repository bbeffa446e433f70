"""One limitation per fact: fold findings that restate another one into it.

Which findings restate which is decided by the audit pipeline, which can see the rows and run the
tests (:mod:`service.audits.pipeline.facts`); here the folding itself is pure: a :class:`Relation` says
"``child`` is part of ``parent``, because ``reason``", and :func:`fold` keeps the parent, moves the
child into its ``related`` list and adds one sentence saying what the parent also explains.

>>> from reports.result import LimitationRecord
>>> a = LimitationRecord(rank=1, kind="untested_context", slice="65+", title="t", statement="S.", score=0.02,
...                      severity="medium", key="untested_context:age_group == \\"65+\\"")
>>> b = LimitationRecord(rank=2, kind="context_mix_shift", slice="older", title="the share of older changed",
...                      statement="T.", score=0.0, severity="low", key="context_mix_shift:age >= 65")
>>> [l.key for l in fold([a, b], [Relation(b.key, a.key, "same_rows")])]
['untested_context:age_group == "65+"']
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reports.records import STANDING_KINDS, rank_order, severity_label
from reports.result import LimitationRecord

__all__ = ["Relation", "fold", "REASONS", "EXPLAINS"]

REASONS = {
    "same_rows": "the same production rows",
    "nested": "rows inside it, and no worse",
    "explains": "explained by it: without these rows the shift disappears",
    "column_mix": "the same context column's mix change",
    "class_mix": "explained by the class-mix change: against the benchmark with the production class mix it disappears",
    "located": "explained by it: the change is located in these rows",
    "covariate_mix": "explained by the covariate shift: the benchmark reweighted to production's inputs has this mix",
    "adjusted": "no longer a change once production is adjusted to the benchmark on it",
}
EXPLAINS = frozenset({"explains", "class_mix", "located", "covariate_mix", "adjusted"})


@dataclass(frozen=True)
class Relation:
    """``child`` (a limitation key) restates part of ``parent`` for ``reason`` (a key of REASONS)."""

    child: str
    parent: str
    reason: str
    note: str = ""  # what was measured to decide it, quoted in the evidence


def _root(key: str, parent_of: dict[str, str]) -> str:
    seen = set()
    while key in parent_of and key not in seen:
        seen.add(key)
        key = parent_of[key]
    return key


def _sentence(children: list[tuple[LimitationRecord, Relation]]) -> str:
    """One sentence for the restatements of the same rows, one for the side effects this cause explains."""
    return _sentence_of([(child.title, rel.reason) for child, rel in children])


def _sentence_of(pairs: Sequence[tuple[str, str]]) -> str:
    """:func:`_sentence` from (title, reason) pairs; a title said once per lead, however many relations name it."""
    out = ""
    for explains, lead in ((False, "The same fact also shows as"), (True, "It also explains")):
        group = list(dict.fromkeys((title, reason) for title, reason in pairs if (reason in EXPLAINS) == explains))
        if not group:
            continue
        parts = [f"{title} ({REASONS.get(reason, reason)})" for title, reason in group[:4]]
        more = f" and {len(group) - 4} more" if len(group) > 4 else ""
        out += f" {lead}: {'; '.join(parts)}{more}."
    return out


def _with_sentence(head: LimitationRecord, children: list[tuple[LimitationRecord, Relation]]) -> str:
    """``head``'s statement with its children said: a head folded before (a group folded again) has its
    sentence rewritten with the new children in it, so each lead appears once in the paragraph."""
    before = [(str(r.get("title")), str(r.get("reason"))) for r in head.related]
    said = _sentence_of(before)
    if before and said and said in head.statement:
        return head.statement.replace(said, _sentence_of(before + [(c.title, r.reason) for c, r in children]))
    return head.statement + _sentence(children)


def _changed_if_a_member_changed(head: LimitationRecord, kids: Sequence[LimitationRecord]) -> LimitationRecord:
    """A standing weakness that absorbs a change about its rows (its share grew, it dropped further)
    states a fact that changed: the group is a change claim, decided by that member's test. Left
    standing, a weak slice whose share went from 3 % to 18 % of production never alerted."""
    if head.claim != "standing" or head.kind in STANDING_KINDS:
        return head
    change = next((c for c in sorted(kids, key=lambda c: -c.score) if c.claim == "change"
                   and c.kind not in STANDING_KINDS), None)
    if change is None:
        return head
    # the head's own sentence on why it was standing no longer holds: the member's change is said instead
    why = head.evidence.get("claim_reason") or ""
    statement = head.statement.replace(why, "") if why else head.statement
    statement += f" It changed in production: {change.title} ({change.kind.replace('_', ' ')})."
    basis = "share" if change.kind in ("context_mix_shift", "untested_context") else "drop"
    return head.replaced(claim="change", decision=change.decision or head.decision, statement=statement,
                         evidence={**head.evidence, "change_basis": basis})


def fold(limitations: Sequence[LimitationRecord], relations: Sequence[Relation]) -> list[LimitationRecord]:
    """Limitations with every related child folded into its root parent, re-ranked by score.

    A group's score is its head's when the head's gap was measured, else the largest score in the
    group (every member's assumed gap is a guess of the same harm; the largest one is kept).
    """
    by_key = {lim.key: lim for lim in limitations}
    parent_of = {r.child: r.parent for r in relations if r.child in by_key and r.parent in by_key
                 and r.child != r.parent}
    children: dict[str, list[tuple[LimitationRecord, Relation]]] = {}
    for r in relations:
        if r.child in parent_of and parent_of[r.child] == r.parent:
            children.setdefault(_root(r.parent, parent_of), []).append((by_key[r.child], r))
    heads = []
    for lim in limitations:
        if lim.key in parent_of:
            continue
        kids = children.get(lim.key, [])
        if kids:
            score = lim.score if lim.evidence.get("gap_measured") else max([lim.score] + [c.score for c, _ in kids])
            if score > lim.score:  # the group is scored by a member: the basis says which, not the head's own
                member = max((c for c, _ in kids), key=lambda c: c.score)
                statement = lim.statement.replace(
                    " The severity uses this measured loss, not an assumed one.",
                    " The severity is that of the largest finding it absorbs (below), not this overall loss.")
                lim = lim.replaced(statement=statement, evidence={**lim.evidence, "severity_basis": (
                    f"the largest expected loss in the group, of {member.title}: "
                    f"{member.evidence.get('severity_basis') or round(member.score, 6)}")})
            related = [{"key": c.key, "kind": c.kind, "slice": c.slice, "title": c.title, "statement": c.statement,
                        "score": c.score, "reason": rel.reason, "note": rel.note} for c, rel in kids]
            lim = lim.replaced(statement=_with_sentence(lim, kids), score=round(score, 6),
                               severity=severity_label(score), related=[*lim.related, *related])
            lim = _changed_if_a_member_changed(lim, [c for c, _ in kids])
        heads.append(lim)
    heads.sort(key=rank_order)
    return [lim.replaced(rank=i) for i, lim in enumerate(heads, start=1)]
