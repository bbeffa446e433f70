"""A group folded again (a cause found after the same-rows grouping) says each lead once."""
from __future__ import annotations

from reports.grouping import Relation, fold
from reports.result import LimitationRecord


def _lim(key: str, title: str, score: float) -> LimitationRecord:
    return LimitationRecord(rank=1, kind="context_mix_shift", slice=key, title=title, statement=f"{title}.",
                            score=score, severity="medium", key=key)


def test_a_group_folded_twice_says_the_same_fact_once():
    head, a, b = _lim("head", "the share of older changed", 0.3), _lim("a", "first", 0.1), _lim("b", "second", 0.1)
    once = fold([head, a], [Relation("a", "head", "same_rows")])
    twice = fold([*once, b], [Relation("b", "head", "nested")])
    statement = twice[0].statement
    assert statement.count("The same fact also shows as") == 1
    assert "first (the same production rows)" in statement and "second (rows inside it, and no worse)" in statement


def test_a_child_named_by_two_relations_is_listed_once():
    head, a = _lim("head", "the share of older changed", 0.3), _lim("a", "first", 0.1)
    folded = fold([head, a], [Relation("a", "head", "same_rows"), Relation("a", "head", "same_rows")])
    assert folded[0].statement.count("first (") == 1
