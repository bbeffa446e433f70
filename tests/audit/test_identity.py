"""One fact, one claim: findings about the same rows group under exactly one of them."""
import numpy as np

from audit.claims.identity import row_relations
from reports.grouping import fold
from reports.result import LimitationRecord


def _lim(definition: str) -> LimitationRecord:
    return LimitationRecord(rank=0, kind="concept_shift", slice=definition, title=definition, statement="s", score=0.1,
                      severity="high", definition=definition, key=f"concept_shift:{definition}", claim="change")


def test_twins_on_equal_rows_fold_one_into_the_other_and_neither_vanishes():
    # a slice and its twin with a redundant condition: the same rows, kind and score
    a, b = _lim('compression == "heavy"'), _lim('compression == "heavy" and resolution < 480')
    rows = np.array([True, True, False, False])
    relations = row_relations([a, b], {a.key: rows, b.key: rows.copy()})
    assert [(r.child, r.parent) for r in relations] == [(b.key, a.key)]
    kept = fold([a, b], relations)
    assert [lim.key for lim in kept] == [a.key] and [r["key"] for r in kept[0].related] == [b.key]
