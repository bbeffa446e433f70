"""One multiple-testing correction across everything an audit tested.

Every detector result states its hypothesis tests explicitly (``result.tests``) and rebuilds
itself from corrected ones (``result.with_tests(tests)``, see :mod:`detectors.decision`).
:func:`correct_together` gathers the tests of named results in a fixed order, corrects them
as one family and hands each result back its own, re-decided tests. No reflection: a result
that does not follow the protocol is a programming error, reported as such.
"""
from __future__ import annotations

from typing import Any, Mapping

from detectors.correction import readjust


def _tests(name: str, result: Any) -> tuple:
    try:
        return tuple(result.tests)
    except AttributeError:
        raise TypeError(f"audit part {name!r} ({type(result).__name__}) does not expose .tests") from None


def correct_together(results: Mapping[str, Any], *, alpha: float, method: str) -> tuple[dict[str, Any], int]:
    """Correct all tests of ``results`` (name → result or None) as one family.

    Returns the rebuilt results under the same names and the number of hypotheses actually
    tested (tests with a p-value; NaN means "not tested").
    """
    present = {name: r for name, r in results.items() if r is not None}
    groups = {name: _tests(name, r) for name, r in present.items()}
    family = [t for tests in groups.values() for t in tests]
    adjusted = list(readjust(family, alpha=alpha, correction=method))
    rebuilt: dict[str, Any] = dict(results)
    start = 0
    for name, tests in groups.items():
        mine = adjusted[start:start + len(tests)]
        start += len(tests)
        rebuilt[name] = present[name].with_tests(mine) if tests else present[name]
    tested = sum(1 for t in family if t.p_value == t.p_value)
    return rebuilt, tested
