"""Per-feature two-sample statistics and effect sizes, computed from sorted arrays.

Scoring only (no decisions): the detectors turn these numbers into
:class:`detectors.base.ShiftTest` records and decide with the one decision rule of :mod:`detectors.decision`.

Numeric columns: both samples are sorted once; a *stable* argsort of the two sorted runs
concatenated merges them in linear time (timsort finds the two runs), and one pass over
the merged order gives the gap between the two empirical CDFs at every pooled point. From
that single gap array come the Kolmogorov–Smirnov statistic (equal to
``scipy.stats.ks_2samp``), the Cramér–von Mises statistic (Anderson 1962, equal to
``scipy.stats.cramervonmises_2samp`` without ties) and the Wasserstein-1 distance
(the area between the CDFs).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> ref, cur = np.sort(rng.normal(size=500)), np.sort(rng.normal(0.5, 1, size=400))
>>> d, t, w = ecdf_gap_statistics(ref, cur)
>>> from scipy import stats
>>> bool(np.isclose(d, stats.ks_2samp(ref, cur).statistic))
True
>>> bool(np.isclose(w, stats.wasserstein_distance(ref, cur)))
True
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

try:  # the exact two-sample KS distribution; private in scipy, so keep a public fallback
    from scipy.stats._stats_py import _attempt_exact_2kssamp
except ImportError:  # pragma: no cover - exercised only on a scipy without it
    _attempt_exact_2kssamp = None

__all__ = [
    "KS_EXACT_MAX_N",
    "ChiSquareOutcome",
    "chi2_two_sample",
    "balanced_cramers_v",
    "cramers_v",
    "cvm_pvalue",
    "ecdf_gap_statistics",
    "jensen_shannon_distance",
    "ks_pvalue",
    "ks_test",
    "ks_tied_test",
    "ks_tied_pvalue",
    "TIED_MAX_LEVELS",
    "missing_rate_test",
    "population_stability_index",
]

KS_EXACT_MAX_N = 10_000  # same switch as scipy's method="auto"


def ecdf_gap_statistics(reference: np.ndarray, current: np.ndarray) -> tuple[float, float, float]:
    """KS statistic, Cramér–von Mises T and Wasserstein-1 of two **sorted**, NaN-free samples.

    Parameters
    ----------
    reference : ndarray of shape (n,), sorted ascending
    current : ndarray of shape (m,), sorted ascending

    Returns
    -------
    (ks, cvm, wasserstein) : floats
    """
    n, m = reference.size, current.size
    pooled = np.concatenate([reference, current])
    order = np.argsort(pooled, kind="stable")  # two sorted runs: a linear-time merge
    values = pooled.take(order)
    del pooled
    # Same arithmetic as scipy (count / n - count / m), so the statistic matches bit for bit: the
    # counts are exact integers in float64. Worked in place, in a few buffers of the pooled size
    # (each new million-row temporary costs its page faults, a third of this function's time).
    current_seen = np.cumsum(order >= n, dtype=np.float64)
    del order
    gap = np.arange(1, n + m + 1, dtype=np.float64)
    gap -= current_seen
    gap /= n
    current_seen /= m
    gap -= current_seen
    # With ties the ECDFs are only defined after the whole tie group: use group ends.
    group_end = np.empty(n + m, dtype=bool)
    group_end[-1] = True
    np.not_equal(values[1:], values[:-1], out=group_end[:-1])
    # Inside a tie group the value step is 0, so the partial gaps there contribute nothing.
    area = np.diff(values)
    del values
    area *= np.abs(gap[:-1], out=current_seen[:-1])
    wasserstein = float(area.sum())
    del area
    if group_end.all():
        ks = float(max(gap.max(), -gap.min()))
        squared = float(np.multiply(gap, gap, out=current_seen).sum())
    else:
        ends = np.flatnonzero(group_end)
        at_ends = gap[ends]
        ks = float(np.abs(at_ends).max())
        squared = float((at_ends * at_ends * np.diff(ends, prepend=-1)).sum())
    cvm = n * m / (n + m) ** 2 * squared
    return ks, cvm, wasserstein


@functools.lru_cache(maxsize=4096)
def _exact_ks_pvalue(n1: int, n2: int, d: float) -> float:
    success, _, prob = _attempt_exact_2kssamp(n1, n2, math.gcd(n1, n2), d, "two-sided")
    return float(prob) if success else float("nan")


def ks_test(d: float, n1: int, n2: int) -> tuple[float, float, str]:
    """Two-sided KS statistic and p-value as ``scipy.stats.ks_2samp(method="auto")`` gives them.

    Exact distribution when both samples have at most 10,000 values (the statistic is then
    rounded to its lattice ``h / lcm(n1, n2)``, as scipy reports it); otherwise the
    distribution of the one-sample statistic at ``n = round(n1 n2 / (n1 + n2))``
    (``scipy.stats.kstwo``), bit for bit as scipy computes it, with one exception: where
    scipy sums Smirnov's exact series (``2.2 <= n d² < 370``, i.e. p between about 0.02 and
    1e-160) and ``n > 10,000``, that sum costs O(n) - 0.25 s per column at 200,000 rows a
    side, 2.5 s at a million - so the Kolmogorov limit ``kstwobign.sf(sqrt(n) d)`` is used
    instead (``method="asymp_limit"``). The limit is conservative there (never below
    scipy's value) and within 3 % of it whenever p >= 1e-9 (within 1 % from n = 100,000);
    deeper in the tail the relative gap grows, far below any decision threshold.

    Returns ``(statistic, p_value, "exact" | "asymp" | "asymp_limit")``.
    """
    if max(n1, n2) <= KS_EXACT_MAX_N and _attempt_exact_2kssamp is not None:
        lcm = (n1 // math.gcd(n1, n2)) * n2
        d_lattice = round(d * lcm) / lcm
        p = _exact_ks_pvalue(int(n1), int(n2), float(d))
        if math.isfinite(p):
            return d_lattice, float(np.clip(p, 0.0, 1.0)), "exact"
    big, small = max(n1, n2), min(n1, n2)
    en = float(np.round(big * small / (big + small)))
    if en > KS_EXACT_MAX_N and 2.2 <= en * d * d < 370 and d < 0.5:
        return d, float(np.clip(stats.kstwobign.sf(math.sqrt(en) * d), 0.0, 1.0)), "asymp_limit"
    return d, float(np.clip(stats.kstwo.sf(d, en), 0.0, 1.0)), "asymp"


def ks_pvalue(d: float, n1: int, n2: int) -> tuple[float, str]:
    """The p-value part of :func:`ks_test`: ``(p_value, "exact" | "asymp")``."""
    _, p, method = ks_test(d, n1, n2)
    return p, method


TIED_MAX_LEVELS = 5_000  # distinct values up to which tied columns get the permutation KS test
PERMUTATION_BLOCK_CELLS = 1_000_000  # permutations x levels drawn at a time (8 MB per int64 matrix)
# A block of permutations that brings the exceedances to this many ends the draws: below it
# (every p-value under ~0.1 at 2,000 permutations) the p-value is bit for bit the full run's.
SEQUENTIAL_STOP_EXCEEDANCES = 200


def ks_tied_test(reference: np.ndarray, current: np.ndarray, *, n_permutations: int = 2000,
                 random_state: int | None = 0) -> tuple[float, float, str] | None:
    """Tie-correct KS test for **sorted** samples with ties (e.g. integer columns); None without ties.

    KS p-values assume continuous data; with ties they are conservative (about 1 % rejections
    at alpha 0.05 on integer columns), which costs power. Here the null distribution is the
    permutation one, drawn exactly: given the pooled count of every distinct value, the
    reference's counts are multivariate hypergeometric, so each permutation costs O(levels),
    not O(rows). ``p = (1 + #{D_b >= D}) / (1 + B)``. Where the continuous KS p-value (valid,
    conservative under ties) is already below ``1 / (1 + B)`` it is used instead, so strong
    shifts keep their tiny p-values for the audit-wide correction (at most ``1 / (1 + B)``
    of extra size, documented).

    Returns ``(D, p_value, "ks_permutation_ties")`` or None when there are no ties or more
    than :data:`TIED_MAX_LEVELS` distinct values.
    """
    n, m = reference.size, current.size
    # both samples are sorted: their distinct values take one linear pass each, and a sample with
    # more than TIED_MAX_LEVELS of them (any continuous column) is out before the pooled values are sorted
    distinct_ref, distinct_cur = _distinct_sorted(reference), _distinct_sorted(current)
    if max(distinct_ref.size, distinct_cur.size) > TIED_MAX_LEVELS:
        return None
    values = np.union1d(distinct_ref, distinct_cur)
    if values.size == n + m or values.size > TIED_MAX_LEVELS or values.size < 2:
        return None
    cum_ref = np.searchsorted(reference, values, side="right")
    cum_cur = np.searchsorted(current, values, side="right")
    d = float(np.abs(cum_ref / n - cum_cur / m).max())
    p = ks_tied_pvalue(cum_ref, cum_cur, d, n_permutations=n_permutations, random_state=random_state)
    return d, p, "ks_permutation_ties"


def _distinct_sorted(x: np.ndarray) -> np.ndarray:
    """The distinct values of a sorted array (``np.unique`` without its sort)."""
    if x.size == 0:
        return x
    keep = np.empty(x.size, bool)
    keep[0] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def ks_tied_pvalue(cum_reference: np.ndarray, cum_current: np.ndarray, d: float, *, n_permutations: int = 2000,
                   random_state: int | None = 0) -> float:
    """Permutation p-value of the KS statistic ``d`` from cumulative counts at the pooled distinct values.

    ``cum_reference`` and ``cum_current`` (shape (levels,)) count each sample's values ``<=`` each
    distinct pooled value; their last entries are the sample sizes. Used by :func:`ks_tied_test`
    and by the summary-based test (exact value counts of a column merged over partitions).
    """
    cum_ref, cum_cur = np.asarray(cum_reference, dtype=np.int64), np.asarray(cum_current, dtype=np.int64)
    n, m = int(cum_ref[-1]), int(cum_cur[-1])
    floor_p = 1.0 / (1 + n_permutations)
    p_continuous = ks_test(d, n, m)[1]
    if p_continuous <= floor_p:
        return p_continuous
    totals = np.diff(cum_ref + cum_cur, prepend=0)
    cum_totals = np.cumsum(totals)
    rng = np.random.default_rng(random_state)
    # in blocks of rows: 2,000 permutations x 5,000 levels at once would hold several 80 MB matrices
    block = max(1, PERMUTATION_BLOCK_CELLS // max(totals.size, 1))
    exceed, left = 0, int(n_permutations)
    while left > 0:
        size = min(block, left)
        draws = rng.multivariate_hypergeometric(totals, n, size=size, method="marginals").cumsum(axis=1)
        null = np.abs(draws / n - (cum_totals - draws) / m).max(axis=1)
        exceed += int(np.count_nonzero(null >= d - 1e-12))
        left -= size
        if exceed >= SEQUENTIAL_STOP_EXCEEDANCES and left > 0:
            # Besag-Clifford stop: the p-value is at least ~SEQUENTIAL_STOP / B (far above any
            # alpha) and known to a relative error of about 1/sqrt(SEQUENTIAL_STOP) = 7 %; the
            # permutations left would only refine a p-value that decides nothing
            drawn = int(n_permutations) - left
            return float((1 + exceed) / (1 + drawn))
    return float((1 + exceed) / (1 + int(n_permutations)))


def _cvm_limit_cdf(x: float) -> float:
    # Limiting CDF of the one-sample CvM statistic (Csörgő & Faraway 1996, eq. 1.2),
    # summed until the terms vanish; the same series scipy uses.
    total, k = 0.0, 0
    while True:
        y = 4 * k + 1
        q = y * y / (16 * x)
        term = math.exp(special.gammaln(k + 0.5) - special.gammaln(k + 1)) / (math.pi ** 1.5 * math.sqrt(x))
        term *= math.sqrt(y) * math.exp(-q) * special.kv(0.25, q)
        total += term
        k += 1
        if abs(term) < 1e-7 or k > 200:
            return total


def cvm_pvalue(t: float, n1: int, n2: int) -> float:
    """Asymptotic p-value of the two-sample Cramér–von Mises T (Anderson 1962 standardisation)."""
    k, big_n = n1 * n2, n1 + n2
    expected = (1 + 1 / big_n) / 6
    variance = (big_n + 1) * (4 * k * big_n - 3 * (n1 ** 2 + n2 ** 2) - 2 * k) / (45 * big_n ** 2 * 4 * k)
    normalised = 1 / 6 + (t - expected) / math.sqrt(45 * variance)
    if normalised < 0.003:
        return 1.0
    return float(min(max(1.0 - _cvm_limit_cdf(normalised), 0.0), 1.0))


@dataclass(frozen=True)
class ChiSquareOutcome:
    """A two-sample chi-square test on a 2 x k table after merging sparse categories."""

    statistic: float
    p_value: float
    dof: int
    table: np.ndarray  # shape (2, k): reference counts, current counts
    labels: tuple  # category of each column of ``table`` ("<other>" for the merged one)
    merged: tuple  # original categories pooled into "<other>"
    p_method: str = "chi2"  # "fisher_exact" for a sparse 2 x 2 table


OTHER = "<other>"


def _merge_sparse(table: np.ndarray, labels: list, min_expected: float) -> tuple[np.ndarray, list, list]:
    """Pool categories whose smallest expected count is below ``min_expected`` into one bin.

    Which categories are pooled depends only on the pooled column totals, which are the
    same under any relabelling of rows, so the test stays valid (it conditions on them).
    """
    n_small = table.sum(axis=1).min()
    total = table.sum()
    expected_small = table.sum(axis=0) * n_small / total
    sparse = expected_small < min_expected
    if not sparse.any() or table.shape[1] <= 2:
        return table, labels, []
    merged = [lab for lab, s in zip(labels, sparse) if s]
    table = np.column_stack([table[:, ~sparse], table[:, sparse].sum(axis=1)])
    labels = [lab for lab, s in zip(labels, sparse) if not s] + [OTHER]
    # The pooled bin itself may still be sparse: fold it into the smallest real category.
    while table.shape[1] > 2 and table[:, -1].sum() * n_small / total < min_expected:
        smallest = int(np.argmin(table[:, :-1].sum(axis=0)))
        merged.append(labels[smallest])
        table[:, -1] += table[:, smallest]
        table = np.delete(table, smallest, axis=1)
        del labels[smallest]
    return table, labels, merged


def chi2_two_sample(reference_counts: np.ndarray, current_counts: np.ndarray, labels=None, *,
                    min_expected: float = 5.0) -> ChiSquareOutcome:
    """Pearson chi-square test of homogeneity on the 2 x k table of category counts.

    This is the two-sample test (both rows random), not a goodness-of-fit test against
    the reference frequencies. Categories with an expected count below ``min_expected``
    in the smaller sample are pooled into ``"<other>"`` first; after pooling the statistic
    equals ``scipy.stats.chi2_contingency(table, correction=False)``. A table with a single
    category left has statistic 0 and p-value 1 (nothing can differ). A 2 x 2 table that is
    still sparse takes its p-value from Fisher's exact test (the chi-square approximation
    is anti-conservative there); the statistic stays the chi-square one.
    """
    table = np.vstack([np.asarray(reference_counts, float), np.asarray(current_counts, float)])
    labels = list(range(table.shape[1])) if labels is None else list(labels)
    keep = table.sum(axis=0) > 0
    table, labels = table[:, keep], [lab for lab, k in zip(labels, keep) if k]
    table, labels, merged = _merge_sparse(table, labels, min_expected)
    if table.shape[1] < 2:
        return ChiSquareOutcome(0.0, 1.0, 0, table, tuple(labels), tuple(merged))
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
    statistic = float(((table - expected) ** 2 / expected).sum())
    dof = table.shape[1] - 1
    if dof == 1 and expected.min() < min_expected:
        p_value = float(min(stats.fisher_exact(table.astype(np.int64)).pvalue, 1.0))
        return ChiSquareOutcome(statistic, p_value, dof, table, tuple(labels), tuple(merged), "fisher_exact")
    return ChiSquareOutcome(statistic, float(stats.chi2.sf(statistic, dof)), dof, table,
                            tuple(labels), tuple(merged))


def cramers_v(statistic: float, table: np.ndarray) -> float:
    """Cramér's V of a 2 x k table: ``sqrt(chi2 / (N * (min(2, k) - 1)))``; 0 when k < 2."""
    k = table.shape[1]
    if k < 2:
        return 0.0
    return float(math.sqrt(statistic / table.sum()))


def balanced_cramers_v(table: np.ndarray) -> float:
    """Cramér's V of a 2 x k table as if both samples had the same size.

    ``sqrt(sum_j (p_j - q_j)^2 / (2 (p_j + q_j)))`` with ``p``, ``q`` the two rows' shares:
    equal to :func:`cramers_v` when the two samples are equally large, and, unlike it, the
    same whatever their ratio (plain V shrinks as one sample grows: a 50/50 -> 35/65 shift is
    0.15 at 3k/3k but 0.03 at 3k/300k). This is the effect used against the floor.
    """
    table = np.asarray(table, float)
    if table.shape[1] < 2 or (table.sum(axis=1) == 0).any():
        return 0.0
    p, q = table[0] / table[0].sum(), table[1] / table[1].sum()
    both = p + q
    keep = both > 0
    return float(math.sqrt(((p[keep] - q[keep]) ** 2 / (2 * both[keep])).sum()))


def _proportions(counts: np.ndarray) -> np.ndarray:
    counts = np.asarray(counts, float)
    total = counts.sum()
    return counts / total if total > 0 else counts


def jensen_shannon_distance(reference_counts, current_counts) -> float:
    """Jensen–Shannon distance (base 2, in [0, 1]) between two category distributions."""
    p, q = _proportions(reference_counts), _proportions(current_counts)
    mid = (p + q) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        kl_p = np.where(p > 0, p * np.log2(p / mid), 0.0).sum()
        kl_q = np.where(q > 0, q * np.log2(q / mid), 0.0).sum()
    return float(math.sqrt(max((kl_p + kl_q) / 2, 0.0)))


def population_stability_index(reference_counts, current_counts, *, epsilon: float = 1e-4) -> float:
    """PSI = sum (q - p) ln(q / p), with empty shares replaced by ``epsilon`` (as Evidently does)."""
    p = np.maximum(_proportions(reference_counts), epsilon)
    q = np.maximum(_proportions(current_counts), epsilon)
    return float(((q - p) * np.log(q / p)).sum())


def missing_rate_test(missing_reference: int, n_reference: int, missing_current: int,
                      n_current: int) -> tuple[float, float, str]:
    """Two-sample test of equal missing-value rates; returns ``(z, p_value, method)``.

    The statistic is always the pooled two-proportion z. The p-value is the normal one when
    every expected cell count is at least 5, and Fisher's exact test otherwise, because the
    normal approximation is anti-conservative for rare missing values in small samples.
    """
    k1, n1, k2, n2 = missing_reference, n_reference, missing_current, n_current
    pooled = (k1 + k2) / (n1 + n2)
    if pooled in (0.0, 1.0):
        return 0.0, 1.0, "z_two_proportions"
    z = (k2 / n2 - k1 / n1) / math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    smallest_expected = min(n1, n2) * min(pooled, 1 - pooled)
    if smallest_expected < 5:
        p = stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue
        return float(z), float(min(max(p, 0.0), 1.0)), "fisher_exact"
    return float(z), float(2 * stats.norm.sf(abs(z))), "z_two_proportions"
