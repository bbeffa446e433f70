"""One multiple-testing correction across everything an audit tested (SPEC §5).

Detector results are frozen dataclasses that hold :class:`~detectors.base.ShiftTest`
records somewhere inside. :func:`correct_together` walks them in a fixed order, corrects
the whole family at once and rebuilds each result with its re-adjusted tests; a result's
``is_shift`` becomes "any of its tests drifted after the audit-wide correction".
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Sequence

from detectors.base import ShiftTest
from detectors.correction import readjust


def collect(obj: Any) -> list[ShiftTest]:
    """Every ShiftTest inside ``obj`` (dataclass fields, tuples and lists), in walk order."""
    if isinstance(obj, ShiftTest):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for item in obj for t in collect(item)]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [t for f in dataclasses.fields(obj) for t in collect(getattr(obj, f.name))]
    return []


def _swap(obj: Any, replacements: Iterator[ShiftTest]) -> Any:
    if isinstance(obj, ShiftTest):
        return next(replacements)
    if isinstance(obj, (tuple, list)):
        return type(obj)(_swap(item, replacements) for item in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if collect(value):
                changes[f.name] = _swap(value, replacements)
        if not changes:
            return obj
        updated = dataclasses.replace(obj, **changes)
        if hasattr(updated, "is_shift") and isinstance(updated.is_shift, bool):
            updated = dataclasses.replace(updated, is_shift=any(t.drifted for t in collect(updated)))
        return updated
    return obj


def correct_together(results: Sequence[Any], *, alpha: float, method: str) -> tuple[list[Any], int]:
    """Correct all tests inside ``results`` as one family; return the rebuilt results and the
    number of hypotheses actually tested (tests with a p-value)."""
    tests = [t for r in results for t in collect(r)]
    adjusted = iter(readjust(tests, alpha=alpha, method=method))
    rebuilt = [_swap(r, adjusted) for r in results]
    tested = sum(1 for t in tests if t.p_value == t.p_value)  # NaN: not tested
    return rebuilt, tested
