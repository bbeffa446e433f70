"""Context-conditional shift: what remains after reweighting the benchmark to the production mix.

Does a feature's (or the model output's) distribution still differ after reweighting the
benchmark to the production context mix? Rows are grouped into **context cells**
(:func:`detectors.attribution.context_cells`). Each benchmark row in cell ``c`` gets the
importance weight ``n_p(c) / n_b(c)``. The statistic is the KS distance (numeric) or total
variation distance (categorical) between production and the reweighted benchmark; its
p-value comes from a permutation test that shuffles the dataset labels **within cells**,
which keeps every cell's counts (so the weights) fixed and is exact under "same distribution
within every context cell": ``p = (1 + #{T_b >= T}) / (1 + B)``. Production rows in cells
the benchmark lacks are left out (reported as ``uncovered_share``). ``details`` also give
the unweighted statistic, so what the mix explains is visible.

Like every detector: ``fit(reference, reference_cells)`` remembers the benchmark, then
``test(current, current_cells)`` tests production against it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from detectors.base import (
    DetectorInputError,
    Result,
    ShiftTest,
    check_alpha,
    check_correction,
    check_effect_floors,
    check_fitted,
    check_int,
    check_random_state,
)
from detectors.correction import readjust
from detectors.decision import check_tests

__all__ = ["ConditionalShiftDetector", "ConditionalShiftResult", "CONDITIONAL_EFFECT_FLOORS"]

CONDITIONAL_EFFECT_FLOORS = {"weighted_ks": 0.1, "weighted_tvd": 0.1}


@dataclass(frozen=True)
class ConditionalShiftResult(Result):
    """Shift that remains after reweighting the benchmark to the production context mix."""

    is_shift: bool
    tests: tuple  # ShiftTest per column, kind="context_conditional"
    uncovered_share: float  # production rows in cells without benchmark rows (left out)
    n_cells: int
    alpha: float
    correction: str

    def with_tests(self, tests) -> "ConditionalShiftResult":
        """A copy holding re-corrected ``tests`` (order of :attr:`tests`), ``is_shift`` re-derived."""
        tests = check_tests(self, tests)
        return replace(self, tests=tests, is_shift=any(t.drifted for t in tests))


def _cells(cells, frame, role: str) -> np.ndarray:
    codes = np.asarray(cells)
    if codes.shape != (len(frame),):
        raise DetectorInputError(f"{role}_cells must have one entry per row of the {role} frame "
                                 f"(shape ({len(frame)},)), got shape {codes.shape}.")
    return codes.astype(np.int64)


class ConditionalShiftDetector:
    """Permutation tests of "same distribution within every context cell".

    Parameters
    ----------
    alpha, correction : decision level and multiple-testing correction across columns
    n_permutations : int, default 500
    max_rows : int, default 10_000
        Rows per dataset used (a seeded random subsample above it).
    min_samples : int, default 30
        Fewest covered rows per dataset to test.
    effect_floors : dict, optional, overrides of :data:`CONDITIONAL_EFFECT_FLOORS`
    discrete_max_unique : int, default 12
        Numeric columns with at most this many distinct values are compared as categories.
    random_state : int, default 0

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> cb, cp = rng.integers(0, 2, 1500), (rng.random(1500) < 0.8).astype(int)  # mix shifts
    >>> xb, xp = rng.normal(cb, 1), rng.normal(cp, 1)  # x depends on the cell only
    >>> det = ConditionalShiftDetector().fit(pd.DataFrame({"x": xb}), cb)
    >>> res = det.test(pd.DataFrame({"x": xp}), cp)
    >>> res.is_shift, res.tests[0].details["unweighted_statistic"] > 0.1
    (False, True)
    """

    def __init__(self, *, alpha=0.05, correction="bh", n_permutations=500, max_rows=10_000, min_samples=30,
                 effect_floors=None, discrete_max_unique=12, random_state=0):
        self.alpha = alpha
        self.correction = correction
        self.n_permutations = n_permutations
        self.max_rows = max_rows
        self.min_samples = min_samples
        self.effect_floors = effect_floors
        self.discrete_max_unique = discrete_max_unique
        self.random_state = random_state

    def _check_params(self) -> None:
        check_alpha(self.alpha)
        check_correction(self.correction)
        check_int("n_permutations", self.n_permutations, minimum=1)
        check_int("max_rows", self.max_rows, minimum=1)
        check_int("min_samples", self.min_samples, minimum=1)
        check_effect_floors("effect_floors", self.effect_floors, CONDITIONAL_EFFECT_FLOORS)
        check_int("discrete_max_unique", self.discrete_max_unique, minimum=0)
        check_random_state(self.random_state)

    def fit(self, reference: pd.DataFrame, reference_cells) -> "ConditionalShiftDetector":
        """Remember the benchmark columns (n_b, k) and the context cell of each row (n_b,)."""
        self._check_params()
        if not isinstance(reference, pd.DataFrame):
            raise DetectorInputError(f"reference must be a DataFrame, got {type(reference).__name__}.")
        self.reference_cells_ = _cells(reference_cells, reference, "reference")
        self.reference_ = reference
        self.feature_names_in_ = tuple(reference.columns)
        return self

    def test(self, current: pd.DataFrame, current_cells) -> ConditionalShiftResult:
        """Test every fitted column of ``current`` (n_p, k) given the cell of each row (n_p,)."""
        check_fitted(self, "reference_")
        self._check_params()
        missing = [c for c in self.feature_names_in_ if c not in getattr(current, "columns", ())]
        if missing:
            raise DetectorInputError(f"current lacks the columns {missing}.")
        benchmark, production = self.reference_, current
        cb, cp = self.reference_cells_, _cells(current_cells, current, "current")
        rng = np.random.default_rng(self.random_state)
        ib, ip = self._subsample(len(cb), rng), self._subsample(len(cp), rng)
        cb, cp = cb[ib], cp[ip]
        covered_p = np.isin(cp, cb)
        uncovered = float(1 - covered_p.mean())
        ip, cp = ip[covered_p], cp[covered_p]
        cells = np.concatenate([cb, cp])
        is_prod = np.concatenate([np.zeros(len(cb), bool), np.ones(len(cp), bool)])
        n_cells = int(cells.max()) + 1 if len(cells) else 1
        n_b_cell = np.bincount(cb, minlength=n_cells).astype(float)
        n_p_cell = np.bincount(cp, minlength=n_cells).astype(float)
        # contribution of a row to "production ECDF - reweighted benchmark ECDF"; sums to 0 per cell
        with np.errstate(invalid="ignore", divide="ignore"):
            bench_weight = np.where(n_b_cell > 0, n_p_cell / np.where(n_b_cell > 0, n_b_cell, 1), 0.0)
        n_p = max(len(cp), 1)
        contrib_prod, contrib_bench = 1.0 / n_p, -bench_weight[cells] / n_p
        # the same relabellings serve every column (n_permutations x rows booleans)
        perms = list(_within_cell_permutations(cells, is_prod, int(self.n_permutations), rng))
        tests = []
        for name in self.feature_names_in_:
            values = pd.concat([benchmark[name].iloc[ib], production[name].iloc[ip]], ignore_index=True)
            tests.append(self._one(name, values, is_prod, perms, contrib_prod, contrib_bench, len(cb), len(cp)))
        tests = readjust(tests, alpha=self.alpha, correction=self.correction)
        return ConditionalShiftResult(any(t.drifted for t in tests), tuple(tests), uncovered, int((n_p_cell > 0).sum()),
                                      float(self.alpha), self.correction)

    def _subsample(self, n: int, rng) -> np.ndarray:
        return np.sort(rng.choice(n, int(self.max_rows), replace=False)) if n > self.max_rows else np.arange(n)

    def _one(self, name, values: pd.Series, is_prod, perms, c_prod, c_bench, n_b, n_p) -> ShiftTest:
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values) \
            and values.nunique(dropna=True) > self.discrete_max_unique
        effect = "weighted_ks" if numeric else "weighted_tvd"
        floor = float({**CONDITIONAL_EFFECT_FLOORS, **(self.effect_floors or {})}[effect])
        keep = values.notna().to_numpy()
        if min((keep & ~is_prod).sum(), (keep & is_prod).sum()) < self.min_samples:
            nan = float("nan")
            return ShiftTest(name, "permutation", nan, nan, nan, nan, effect, floor, n_b, n_p, False,
                             kind="context_conditional", status="insufficient_data")
        # the kept values sorted (or one-hot encoded) once for every chunk of permutations
        stat_fn = (_ks_statistics if numeric else _tvd_statistics)(values[keep])
        # the kept rows chosen before the choice of contributions: the same values, one (chunk x rows) array less
        def contrib(labels):
            return np.where(labels[..., keep], c_prod, c_bench[keep])

        observed = float(stat_fn(contrib(is_prod)[None, :])[0])
        unweighted = float(stat_fn(np.where(is_prod, 1 / is_prod.sum(), -1 / (~is_prod).sum())[None, keep])[0])
        null = np.concatenate([stat_fn(contrib(chunk)) for chunk in perms])
        p = float((1 + (null >= observed - 1e-12).sum()) / (1 + null.size))
        details = {"unweighted_statistic": unweighted, "n_permutations": int(null.size),
                   "explained_by_mix": float(1 - observed / unweighted) if unweighted > 0 else 0.0}
        return ShiftTest(name, "permutation_within_cells", observed, p, p, observed, effect, floor, n_b, n_p, False,
                         kind="context_conditional", details=details)


def _within_cell_permutations(cells: np.ndarray, is_prod: np.ndarray, n_perm: int, rng, chunk: int = 100):
    """Yield boolean label matrices (chunk, m): dataset labels shuffled within each cell."""
    by_cell = np.argsort(cells, kind="stable")
    labels_by_cell = is_prod[by_cell]
    for start in range(0, n_perm, chunk):
        b = min(chunk, n_perm - start)
        keys = cells[None, :] + rng.random((b, cells.size))  # random order inside each cell block
        order = np.argsort(keys, axis=1)
        out = np.empty((b, cells.size), dtype=bool)
        np.put_along_axis(out, order, np.broadcast_to(labels_by_cell, (b, cells.size)), axis=1)
        yield out


def _ks_statistics(values: pd.Series):
    """The function ``contrib -> max_x |sum of contributions of rows with value <= x|`` (per row of
    ``contrib``) for these ``values``."""
    v = values.to_numpy(float)
    order = np.argsort(v, kind="stable")
    sorted_v = v[order]
    ends = np.append(sorted_v[1:] != sorted_v[:-1], True)  # ECDFs only at the end of tie groups
    return lambda contrib: np.abs(np.cumsum(contrib[:, order], axis=1)[:, ends]).max(axis=1)


def _tvd_statistics(values: pd.Series):
    """The function ``contrib -> half the summed |contributions| per category`` for these ``values``."""
    codes = pd.factorize(values.astype(object))[0]
    onehot = np.zeros((codes.size, codes.max() + 1))
    onehot[np.arange(codes.size), codes] = 1
    return lambda contrib: 0.5 * np.abs(contrib @ onehot).sum(axis=1)
