"""Result types of :class:`detectors.context.ContextShiftDetector`: slice shares, untested contexts
and the overall :class:`ContextShiftResult` (SPEC §9 ``semantic``)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from detectors.base import Result, ShiftTest
from detectors.decision import check_tests

__all__ = ["SliceShare", "UntestedContext", "ContextShiftResult"]


@dataclass(frozen=True)
class SliceShare(Result):
    """How much of each dataset falls in one slice, and whether that changed."""

    name: str
    n_benchmark: int
    n_production: int
    benchmark_share: float
    benchmark_share_ci: tuple
    production_share: float
    production_share_ci: tuple
    difference: float  # production share - benchmark share
    difference_ci: tuple
    test: ShiftTest


@dataclass(frozen=True)
class UntestedContext(Result):
    """A context present in production that the benchmark cannot evaluate."""

    name: str  # e.g. 'generator == "diffusion"' or a slice name
    kind: str  # unseen_value | rare_value | below_range | above_range | unseen_slice | rare_slice
    column: str | None
    value: Any
    n_benchmark: int
    n_production: int
    production_share: float
    production_share_ci: tuple
    min_slice_size: int


@dataclass(frozen=True)
class ContextShiftResult(Result):
    """Outcome of :meth:`ContextShiftDetector.test`; ``to_dict()`` gives SPEC §9 ``semantic``."""

    is_shift: bool
    contexts: tuple  # ShiftTest per context column, kind="context"
    slice_shares: tuple  # SliceShare per slice (its .test has kind="slice_share")
    untested_contexts: tuple  # UntestedContext, largest production share first
    alpha: float
    correction: str
    n_benchmark: int
    n_production: int
    embedding: Any = None  # e.g. an EmbeddingShiftResult attached with with_embedding()
    range_candidates: tuple = ()  # UntestedContext beyond a numeric range, one per range test
    range_tests: tuple = ()  # ShiftTest (kind="untested_range") of each candidate

    @property
    def tests(self) -> tuple:
        """Every hypothesis test of this result (corrected together)."""
        return self.contexts + tuple(s.test for s in self.slice_shares) + self.range_tests

    def with_tests(self, tests) -> "ContextShiftResult":
        """A copy with the tests replaced by re-corrected ones (same order as :attr:`tests`);
        an untested numeric range is listed only while its exceedance test is drifted."""
        tests = check_tests(self, tests)
        k, s = len(self.contexts), len(self.slice_shares)
        shares = tuple(replace(sh, test=t) for sh, t in zip(self.slice_shares, tests[k:k + s]))
        ranges = tests[k + s:]
        untested = [u for u in self.untested_contexts if u not in self.range_candidates]
        untested += [u for u, t in zip(self.range_candidates, ranges) if t.drifted]
        untested.sort(key=lambda u: (-u.production_share, u.name))
        return replace(self, contexts=tests[:k], slice_shares=shares, range_tests=ranges,
                       untested_contexts=tuple(untested), is_shift=any(t.drifted for t in tests))

    def with_embedding(self, embedding) -> "ContextShiftResult":
        return replace(self, embedding=embedding)
