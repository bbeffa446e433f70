"""Embedding shift and novel regions: where production lies outside the benchmark.

* **Embedding shift**: the MMD permutation test of :class:`detectors.mmd.MMDDetector` on the
  embedding columns (Gaussian kernel, median heuristic, exact permutation p-value), reported
  as a ``ShiftTest`` with ``kind="embedding"``.
* **Novel regions**: k-means clusters of the pooled embeddings (a seeded random subsample of
  benchmark and production rows together, so cluster boundaries do not depend on which
  dataset a row came from). For each cluster the production share is tested against the
  benchmark share with a one-sided two-proportion test (Fisher's exact test when an expected
  count is below 5) — given the pooled rows this is an exact conditional test — as a
  ``ShiftTest`` with ``kind="embedding_region"`` and effect ``1 - benchmark_share /
  production_share`` (floor 2/3: the benchmark has at most a third of production's share).
  ``novel_fraction`` (descriptive) is the share of the cluster's production rows farther from
  their nearest benchmark neighbour than 95 % of benchmark rows are from theirs (measured on
  a seeded probe of at most ``max_rows`` production rows).
* Each region is described by its over-represented context values (share in the region vs
  share in all production rows, "lift").
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.neighbors import NearestNeighbors
from threadpoolctl import threadpool_limits

from detectors.base import (
    DetectorInputError,
    Result,
    ShiftTest,
    check_alpha,
    check_correction,
    check_fitted,
    check_fraction,
    check_int,
    check_number,
    check_random_state,
    renamed_parameters,
)
from detectors.correction import readjust
from detectors.decision import check_tests
from detectors.intervals import wilson_interval
from detectors.mmd import MMDDetector
from slicelang import equals, in_range

__all__ = ["EmbeddingShiftDetector", "EmbeddingShiftResult", "NovelRegion", "ContextDescription", "embedding_matrix"]


def embedding_matrix(data, *, prefix: str = "emb_") -> np.ndarray:
    """(n, d) float matrix from an array, or from a frame's ``emb_0 … emb_k`` / list-valued ``embedding`` column."""
    if isinstance(data, pd.DataFrame):
        cols = sorted((c for c in data.columns if str(c).startswith(prefix) and str(c)[len(prefix):].isdigit()),
                      key=lambda c: int(str(c)[len(prefix):]))
        if cols:  # columns stacked as rows, then one transposing copy: half of data[cols].to_numpy()'s cost
            data = np.ascontiguousarray(np.vstack([data[c].to_numpy(float) for c in cols]).T)
        elif "embedding" in data.columns:
            data = np.vstack(data["embedding"].to_numpy())
        else:
            raise DetectorInputError(f"no embedding columns ({prefix}0 … or 'embedding') in the frame.")
    x = np.asarray(data, dtype=float)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise DetectorInputError(f"embeddings must be a non-empty (n, d) matrix, got shape {x.shape}.")
    if not np.isfinite(x).all():
        raise DetectorInputError("embeddings contain NaN or infinite values.")
    return x


@dataclass(frozen=True)
class ContextDescription(Result):
    condition: str  # e.g. 'generator == "diffusion"'
    column: str
    share_in_region: float
    share_in_production: float
    lift: float


@dataclass(frozen=True)
class NovelRegion(Result):
    cluster: int
    n_benchmark: int
    n_production: int
    benchmark_share: float
    benchmark_share_ci: tuple
    production_share: float
    production_share_ci: tuple
    novel_fraction: float
    is_novel: bool
    test: ShiftTest
    contexts: tuple  # ContextDescription, most over-represented first


@dataclass(frozen=True)
class EmbeddingShiftResult(Result):
    is_shift: bool
    test: ShiftTest  # MMD, kind="embedding"
    regions: tuple  # NovelRegion, novel ones first, then by production share
    distance_threshold: float
    n_clusters: int
    n_benchmark: int
    n_production: int

    @property
    def tests(self) -> tuple:
        return (self.test,) + tuple(r.test for r in self.regions)

    def with_tests(self, tests) -> "EmbeddingShiftResult":
        """A copy holding re-corrected ``tests`` (order of :attr:`tests`), ``is_shift`` re-derived."""
        tests = check_tests(self, tests)
        regions = tuple(replace(r, test=t, is_novel=bool(t.drifted)) for r, t in zip(self.regions, tests[1:]))
        return replace(self, test=tests[0], regions=regions, is_shift=any(t.drifted for t in tests))

    @property
    def novel_regions(self) -> tuple:
        return tuple(r for r in self.regions if r.is_novel)


class EmbeddingShiftDetector:
    """MMD embedding-shift test plus novel-region search.

    Parameters
    ----------
    alpha, correction : decision level and correction across the MMD and region tests
    n_permutations, max_samples, mmd_effect_floor : passed to :class:`~detectors.mmd.MMDDetector`
    n_clusters : int, default 8
    max_rows : int, default 5000
        Rows (per dataset) used to fit the clusters and as the nearest-neighbour reference.
    novelty_quantile : float, default 0.95
    region_effect_floor : float, default 2/3
    min_region_size : int, default 30
        Production rows a cluster needs to be tested.
    random_state : int, default 0

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> bench = rng.normal(size=(600, 4))
    >>> prod = np.vstack([rng.normal(size=(540, 4)), rng.normal(6, 0.5, size=(60, 4))])  # synthetic new region
    >>> res = EmbeddingShiftDetector(n_permutations=99).fit(bench).test(prod)
    >>> res.is_shift, len(res.novel_regions), res.novel_regions[0].n_production >= 55
    (True, 1, True)
    """

    def __init__(self, *, alpha=0.05, correction="bh", n_permutations=200, max_samples=1000, mmd_effect_floor=0.01,
                 n_clusters=8, max_rows=5000, novelty_quantile=0.95, region_effect_floor=2 / 3, min_region_size=30,
                 random_state=0):
        self.alpha = alpha
        self.correction = correction
        self.n_permutations = n_permutations
        self.max_samples = max_samples
        self.mmd_effect_floor = mmd_effect_floor
        self.n_clusters = n_clusters
        self.max_rows = max_rows
        self.novelty_quantile = novelty_quantile
        self.region_effect_floor = region_effect_floor
        self.min_region_size = min_region_size
        self.random_state = random_state

    def _check_params(self) -> None:
        check_alpha(self.alpha)
        check_correction(self.correction)
        check_int("n_permutations", self.n_permutations, minimum=1)
        check_int("max_samples", self.max_samples, minimum=1)
        check_number("mmd_effect_floor", self.mmd_effect_floor, minimum=0)
        check_int("n_clusters", self.n_clusters, minimum=1)
        check_int("max_rows", self.max_rows, minimum=1)
        check_fraction("novelty_quantile", self.novelty_quantile)
        check_number("region_effect_floor", self.region_effect_floor, minimum=0, maximum=1)
        check_int("min_region_size", self.min_region_size, minimum=1)
        check_random_state(self.random_state)

    @renamed_parameters(benchmark="reference")
    def fit(self, reference) -> "EmbeddingShiftDetector":
        """Learn the benchmark embeddings ``reference``, shape (n_b, d) (array or frame with ``emb_*``
        columns; ``benchmark=`` is the deprecated name)."""
        self._check_params()
        x = embedding_matrix(reference)
        rng = np.random.default_rng(self.random_state)
        self.benchmark_ = x
        self.reference_ = x[rng.choice(len(x), self.max_rows, replace=False)] if len(x) > self.max_rows else x
        self.mmd_ = MMDDetector(n_permutations=self.n_permutations, max_samples=self.max_samples,
                                effect_floor=self.mmd_effect_floor, alpha=self.alpha,
                                random_state=self.random_state).fit(_frame(x))
        self.nn_ = NearestNeighbors(n_neighbors=min(2, len(self.reference_))).fit(self.reference_)
        own, _ = self.nn_.kneighbors(self.reference_)
        self.distance_threshold_ = float(np.quantile(own[:, -1], self.novelty_quantile))
        return self

    @renamed_parameters(production="current")
    def test(self, current, *, context: pd.DataFrame | None = None) -> EmbeddingShiftResult:
        """Test production embeddings ``current`` (n_p, d; ``production=`` is the deprecated name);
        ``context`` (n_p rows) describes the regions."""
        check_fitted(self, "mmd_")
        self._check_params()
        x = embedding_matrix(current)
        if x.shape[1] != self.benchmark_.shape[1]:
            raise DetectorInputError(f"production embeddings have {x.shape[1]} dimensions, benchmark "
                                     f"{self.benchmark_.shape[1]}.")
        if context is not None and len(context) != len(x):
            raise DetectorInputError("context must have one row per production embedding.")
        mmd = self.mmd_.test(_frame(x)).test
        mmd = replace(mmd, name="embedding_mmd", kind="embedding")
        labels_b, labels_p = self._clusters(x)
        # nearest-neighbour distances of a seeded probe of at most max_rows production rows
        rng = np.random.default_rng(self.random_state + 1)
        probe = rng.choice(len(x), int(self.max_rows), replace=False) if len(x) > self.max_rows else np.arange(len(x))
        near, _ = self.nn_.kneighbors(x[probe], n_neighbors=1)
        far = (near[:, 0] > self.distance_threshold_, labels_p[probe])
        regions = [self._region(c, labels_b, labels_p, far) for c in range(int(self.n_clusters))]
        tests = readjust([mmd] + [r.test for r in regions], alpha=self.alpha, correction=self.correction)
        # the context profile only describes drifted regions: encoded only when there is one
        profile = _ContextProfile(context) if context is not None and any(t.drifted for t in tests[1:]) else None
        regions = [replace(r, test=t, is_novel=bool(t.drifted),
                           contexts=profile.describe(labels_p == r.cluster) if profile and t.drifted else ())
                   for r, t in zip(regions, tests[1:])]
        regions.sort(key=lambda r: (not r.is_novel, -r.production_share))
        return EmbeddingShiftResult(any(t.drifted for t in tests), tests[0], tuple(regions), self.distance_threshold_,
                                    int(self.n_clusters), len(self.benchmark_), len(x))

    def _clusters(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(self.random_state)
        n_b, n_pooled = len(self.benchmark_), len(self.benchmark_) + len(x)
        rows = rng.choice(n_pooled, min(n_pooled, 2 * int(self.max_rows)), replace=False)
        # the sampled rows of benchmark-then-production, without stacking a copy of every row
        fit_rows = np.empty((len(rows), x.shape[1]), dtype=np.result_type(self.benchmark_, x))
        from_b = rows < n_b
        fit_rows[from_b], fit_rows[~from_b] = self.benchmark_[rows[from_b]], x[rows[~from_b] - n_b]
        # thin (n x k) products: BLAS threads only add overhead, and spin on a busy machine
        with threadpool_limits(limits=1, user_api="blas"):
            centres = _kmeans(fit_rows, min(int(self.n_clusters), len(fit_rows)), rng)
            return _nearest(self.benchmark_, centres), _nearest(x, centres)

    def _region(self, c: int, labels_b, labels_p, far) -> NovelRegion:
        n_b, n_p = len(labels_b), len(labels_p)
        in_p = labels_p == c
        k_b, k_p = int((labels_b == c).sum()), int(in_p.sum())
        test = self._share_test(c, k_b, n_b, k_p, n_p)
        far_probe, probe_labels = far
        in_probe = probe_labels == c
        novel_fraction = float(far_probe[in_probe].mean()) if in_probe.any() else float("nan")
        return NovelRegion(c, k_b, k_p, k_b / n_b, wilson_interval(k_b, n_b), k_p / n_p, wilson_interval(k_p, n_p),
                           novel_fraction, False, test, ())

    def _share_test(self, c: int, k_b: int, n_b: int, k_p: int, n_p: int) -> ShiftTest:
        name, floor = f"embedding_region_{c}", float(self.region_effect_floor)
        if k_p < self.min_region_size:
            nan = float("nan")
            return ShiftTest(name, "z_one_sided", nan, nan, nan, nan, "share_uncovered", floor, n_b, n_p, False,
                             kind="embedding_region", status="insufficient_data")
        pooled = (k_b + k_p) / (n_b + n_p)
        se = np.sqrt(pooled * (1 - pooled) * (1 / n_b + 1 / n_p))
        z = (k_p / n_p - k_b / n_b) / se if se > 0 else 0.0
        if min(n_b, n_p) * min(pooled, 1 - pooled) < 5:
            table = [[k_p, n_p - k_p], [k_b, n_b - k_b]]
            p, method = stats.fisher_exact(table, alternative="greater").pvalue, "fisher_exact"
        else:
            p, method = stats.norm.sf(z), "z_one_sided"
        effect = 1 - (k_b / n_b) / (k_p / n_p)
        return ShiftTest(name, method, float(z), float(p), float(p), float(effect), "share_uncovered", floor, n_b, n_p,
                         False, kind="embedding_region")


def _nearest(x: np.ndarray, centres: np.ndarray, chunk: int = 65_536) -> np.ndarray:
    """Index of the nearest centre for every row (chunked: memory stays O(chunk * k))."""
    out = np.empty(len(x), dtype=np.int64)
    c2 = (centres ** 2).sum(1)
    for start in range(0, len(x), chunk):
        block = x[start:start + chunk]
        out[start:start + chunk] = (c2[None, :] - 2 * block @ centres.T).argmin(1)
    return out


def _kmeans(x: np.ndarray, k: int, rng, n_init: int = 3, n_iter: int = 100) -> np.ndarray:
    """Plain numpy k-means (k-means++ seeding, Lloyd iterations), best of ``n_init`` by inertia.

    Written out because scikit-learn's threaded KMeans costs ~0.1 s per fit on small data
    when the machine's cores are busy; this one is single-threaded, vectorised and seeded.
    """
    best, best_inertia = x[:0], np.inf  # n_init >= 1: replaced by the first try
    for _ in range(n_init):
        centres = x[[rng.integers(len(x))]]
        for _ in range(1, k):  # k-means++: next centre with probability proportional to d^2
            d2 = ((x[:, None, :] - centres[None]) ** 2).sum(-1).min(1)
            pick = rng.choice(len(x), p=d2 / d2.sum()) if d2.sum() > 0 else rng.integers(len(x))
            centres = np.vstack([centres, x[pick]])
        for _ in range(n_iter):
            labels = _nearest(x, centres)
            onehot = np.eye(k)[labels]  # (n, k): centre sums by one matrix product
            sums = onehot.T @ x
            counts = onehot.sum(0)[:, None]
            moved = np.where(counts > 0, sums / np.maximum(counts, 1), centres)
            if np.allclose(moved, centres):
                break
            centres = moved
        inertia = ((x - centres[_nearest(x, centres)]) ** 2).sum()
        if inertia < best_inertia:
            best, best_inertia = centres, inertia
    return best


def _frame(x: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(x, columns=[f"emb_{j}" for j in range(x.shape[1])])


class _ContextProfile:
    """Context columns encoded once (numeric ones at production quartiles) to describe regions."""

    def __init__(self, context: pd.DataFrame):
        self.columns = []
        for name in context.columns:
            s = context[name]
            if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) and s.nunique() > 12:
                edges = np.unique(np.quantile(s.dropna(), [0.25, 0.5, 0.75]))
                codes = np.where(s.isna(), -1, np.searchsorted(edges, s.to_numpy(float), side="right"))
                bounds = [None, *edges.tolist(), None]
                texts = [in_range(name, bounds[i], bounds[i + 1]) for i in range(len(edges) + 1)]
            else:
                codes, uniques = pd.factorize(s)
                texts = [equals(name, v) for v in uniques]
            counts = np.bincount(codes[codes >= 0], minlength=len(texts))
            self.columns.append((str(name), codes, texts, counts / max(len(codes), 1)))

    def describe(self, in_region: np.ndarray, *, min_share=0.3, min_lift=1.5, top=5) -> tuple:
        """Context values over-represented in the region, most over-represented first."""
        out, n = [], max(int(in_region.sum()), 1)
        for name, codes, texts, overall in self.columns:
            inside = codes[in_region]
            shares = np.bincount(inside[inside >= 0], minlength=len(texts)) / n
            for i in np.flatnonzero((shares >= min_share) & (shares >= min_lift * overall)):
                out.append(ContextDescription(texts[i], name, float(shares[i]), float(overall[i]),
                                              float(shares[i] / overall[i])))
        out.sort(key=lambda d: (-d.lift, -d.share_in_region))
        return tuple(out[:top])
