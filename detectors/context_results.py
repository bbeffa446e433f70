"""Result types of :class:`detectors.context.ContextShiftDetector`: slice shares, untested contexts
and the overall :class:`ContextShiftResult` (the audit's ``semantic`` block)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from detectors.base import Result, ShiftTest
from detectors.decision import check_tests

__all__ = ["SliceShare", "UntestedContext", "ContextShiftResult", "claim_reason"]


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
    """A context present in production that the benchmark lacks or has too few rows of.

    It is *claimed* (an untested context the audit states) only when it has at least
    ``min_slice_size`` production rows, its rarity in the benchmark is improbable by chance (its
    exact test, ``p_value``, is significant after the audit's correction) and its production share
    passes the floor; otherwise it is kept as not claimed, and ``reason`` says which rule it failed.
    """

    name: str  # e.g. 'generator == "diffusion"', a slice name, or "rare or new values of <column>"
    kind: str  # unseen_value | rare_value | pooled_values | below_range | above_range | unseen_slice | rare_slice
    column: str | None
    value: Any  # the category value, the numeric bound, or (pooled_values) the listed values
    n_benchmark: int
    n_production: int
    production_share: float
    production_share_ci: tuple
    min_slice_size: int
    claimed: bool = True
    p_value: float | None = None  # exact test of the benchmark count (None: too few rows to test)
    p_value_adjusted: float | None = None
    reason: str | None = None  # why it is (not) claimed
    n_values: int = 1  # pooled_values: how many category values the pool holds
    other_values: tuple = ()  # pooled_values: the values beyond the listed ones (``value``)

    @property
    def values(self) -> tuple:
        """Every category value of a pool (listed and the rest); ``(value,)`` otherwise."""
        return tuple(self.value) + tuple(self.other_values) if self.kind == "pooled_values" else (self.value,)


@dataclass(frozen=True)
class ContextShiftResult(Result):
    """Outcome of :meth:`ContextShiftDetector.test`; ``to_dict()`` gives the ``semantic`` block.

    ``untested_contexts`` are the claimed untested contexts, ``not_claimed_contexts`` the other
    candidates with their reasons. Both are rebuilt by :meth:`with_tests` from ``candidates`` (one
    exact test each, in ``candidate_tests``) and ``too_small`` (too few production rows to test).
    """

    is_shift: bool
    contexts: tuple  # ShiftTest per context column, kind="context"
    slice_shares: tuple  # SliceShare per slice (its .test has kind="slice_share")
    untested_contexts: tuple  # claimed UntestedContext, largest production share first
    alpha: float
    correction: str
    n_benchmark: int
    n_production: int
    embedding: Any = None  # e.g. an EmbeddingShiftResult attached with with_embedding()
    candidates: tuple = ()  # UntestedContext with an exact test each (kind untested_context / untested_range)
    candidate_tests: tuple = ()  # ShiftTest of each candidate, same order
    too_small: tuple = ()  # UntestedContext with fewer than min_slice_size production rows: never claimed
    not_claimed_contexts: tuple = ()  # candidates that are not claimed, each with its reason

    @property
    def tests(self) -> tuple:
        """Every hypothesis test of this result (corrected together)."""
        return self.contexts + tuple(s.test for s in self.slice_shares) + self.candidate_tests

    @property
    def range_candidates(self) -> tuple:
        return tuple(u for u in self.candidates if u.kind in ("below_range", "above_range"))

    @property
    def range_tests(self) -> tuple:
        return tuple(t for t in self.candidate_tests if t.kind == "untested_range")

    def with_tests(self, tests) -> "ContextShiftResult":
        """A copy with the tests replaced by re-corrected ones (same order as :attr:`tests`); an
        untested context is claimed exactly while its exact test is drifted (significant after
        correction and its production share at least the floor)."""
        tests = check_tests(self, tests)
        k, s = len(self.contexts), len(self.slice_shares)
        shares = tuple(replace(sh, test=t) for sh, t in zip(self.slice_shares, tests[k:k + s]))
        decided = tests[k + s:]
        claimed: list[UntestedContext] = []
        not_claimed = list(self.too_small)
        for u, t in zip(self.candidates, decided):
            u = replace(u, claimed=bool(t.drifted), p_value=t.p_value, p_value_adjusted=t.p_value_adjusted,
                        reason=claim_reason(t, self.alpha))
            (claimed if t.drifted else not_claimed).append(u)

        def order(u):
            return (-u.production_share, u.name)

        return replace(self, contexts=tests[:k], slice_shares=shares, candidate_tests=decided,
                       untested_contexts=tuple(sorted(claimed, key=order)),
                       not_claimed_contexts=tuple(sorted(not_claimed, key=order)),
                       is_shift=any(t.drifted for t in tests))

    def without_candidates(self, names) -> "ContextShiftResult":
        """A copy without the candidates named in ``names`` (and their tests): e.g. a slice that
        selects exactly the rows of an untested value is one fact, tested once."""
        names = set(names)
        keep = [i for i, u in enumerate(self.candidates) if u.name not in names]
        out = replace(self, candidates=tuple(self.candidates[i] for i in keep),
                      candidate_tests=tuple(self.candidate_tests[i] for i in keep),
                      too_small=tuple(u for u in self.too_small if u.name not in names))
        return out.with_tests(out.tests)

    def with_embedding(self, embedding) -> "ContextShiftResult":
        return replace(self, embedding=embedding)

    def to_dict(self) -> dict:
        """The JSON: candidates appear once, as claimed or not claimed (their tests are kept)."""
        out = super().to_dict()
        out.pop("candidates", None)
        out.pop("too_small", None)
        return out


def claim_reason(test: ShiftTest, alpha: float) -> str:
    """Why a candidate is (not) claimed, in the numbers of its exact test."""
    p, q = test.p_value, test.p_value_adjusted
    where = (f"exact test of its benchmark count p = {p:.2g} (adjusted {q:.2g}); "
             f"{test.effect_size:.1%} of production against a floor of {test.effect_floor:.1%}")
    if test.drifted:
        return f"claimed: {where}"
    if not q < alpha:
        return f"not claimed: its rarity in the benchmark is within chance ({where})"
    return f"not claimed: too small a share of production ({where})"
