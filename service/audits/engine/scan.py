"""One pass over a dataset's Parquet partitions: per-partition summaries, merged.

Each partition (a Parquet file) is read on a worker and reduced to a :class:`Scan`: its row
count, a KLL sketch and exact moments per numeric column, exact counts per categorical column
(and per numeric column with few distinct values), exact (label, prediction) counts overall and
per slice, and a Bernoulli sample of its rows. Scans merge associatively, so the order in which
partitions finish does not matter. Memory: one batch of :data:`BATCH_ROWS` rows per worker at a
time, plus the sample.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from audit.engine.counts import ALL_ROWS, OutcomeCounts
from detectors.base import FrozenDict
from detectors.summaries import CategorySummary, NumericSummary
from domains import evaluate

DISCRETE_MAX_UNIQUE = 100  # numeric columns keep exact counts while they have at most this many values
BATCH_ROWS = 100_000  # rows in memory per worker at a time


@dataclass(frozen=True)
class ScanPlan:
    """What a pass computes; the same plan is sent to every partition."""

    columns: tuple[str, ...]  # read and summarised (features, contexts)
    numeric: tuple[str, ...]  # of those, the numeric ones (sketched)
    label: str | None = None
    prediction: str | None = None
    slices: Mapping[str, str] = field(default_factory=dict)  # name -> slice expression
    sample_fraction: float = 0.0
    random_state: int = 0
    sketch_k: int = 1000
    extra: tuple[str, ...] = ()  # read and kept in the sample only (scores, ids, embeddings)

    def __post_init__(self) -> None:
        object.__setattr__(self, "slices", FrozenDict(dict(self.slices)))

    @property
    def read(self) -> list[str]:
        wanted = [*self.columns, self.label, self.prediction, *self.extra]
        return list(dict.fromkeys(c for c in wanted if c))


@dataclass(frozen=True)
class Scan:
    """The merged summary of some partitions."""

    n_rows: int
    numeric: Mapping[str, Any]  # column -> detectors.summaries.NumericSummary
    categories: Mapping[str, Any]  # categorical column -> detectors.summaries.CategorySummary
    discrete: Mapping[str, Any]  # numeric column -> CategorySummary, None once it has too many values
    outcomes: Mapping[str, OutcomeCounts]  # ALL_ROWS and each slice name
    sample: pd.DataFrame
    n_partitions: int = 1

    def merge(self, other: "Scan") -> "Scan":
        numeric = {c: s.merge(other.numeric[c]) for c, s in self.numeric.items()}
        categories = {c: s.merge(other.categories[c]) for c, s in self.categories.items()}
        discrete = {c: _merge_discrete(s, other.discrete[c]) for c, s in self.discrete.items()}
        outcomes = {k: v.merge(other.outcomes[k]) for k, v in self.outcomes.items()}
        sample = pd.concat([self.sample, other.sample], ignore_index=True)
        return Scan(self.n_rows + other.n_rows, FrozenDict(numeric), FrozenDict(categories),
                    FrozenDict(discrete), FrozenDict(outcomes), sample,
                    self.n_partitions + other.n_partitions)


def _merge_discrete(a, b):
    if a is None or b is None:
        return None
    merged = a.merge(b)
    return None if len(merged.counts) > DISCRETE_MAX_UNIQUE else merged


def read_batches(path: str | Path, columns: list[str], categorical: list[str], batch_rows: int = BATCH_ROWS):
    """The file in batches of at most ``batch_rows`` rows; the ``categorical`` columns as pandas
    categoricals, which keeps repeated strings small and makes counting them cheap."""
    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows, columns=columns):
        yield batch.to_pandas(categories=[c for c in categorical if c in batch.schema.names])


def scan_partition(path: str, plan: ScanPlan, index: int) -> Scan:
    """Summarise one Parquet file (runs on a worker), one bounded batch at a time."""
    merged: Scan | None = None
    categorical = [c for c in (*plan.columns, plan.label, plan.prediction) if c and c not in plan.numeric]
    for i, frame in enumerate(read_batches(path, plan.read, categorical)):
        part = scan_frame(frame, plan, (index, i))
        merged = part if merged is None else merged.merge(part)
    if merged is None:  # a file without rows gives no batch (this failed in dataclasses.replace before)
        raise ValueError(f"Parquet file {path} has no rows: nothing to scan.")
    return replace(merged, n_partitions=1)


def scan_frame(frame: pd.DataFrame, plan: ScanPlan, seed_key: tuple[int, ...]) -> Scan:
    numeric = {c: NumericSummary.from_values(frame[c].to_numpy(dtype=float, na_value=np.nan), k=plan.sketch_k)
               for c in plan.numeric}
    categories = {c: CategorySummary.from_values(frame[c]) for c in plan.columns if c not in plan.numeric}
    # exact counts of numeric columns with few values, which are tested as categorical
    discrete = {c: CategorySummary.from_values(frame[c]) if frame[c].nunique() <= DISCRETE_MAX_UNIQUE else None
                for c in plan.numeric}
    return Scan(len(frame), FrozenDict(numeric), FrozenDict(categories), FrozenDict(discrete),
                FrozenDict(outcome_counts(frame, plan)), _bernoulli(frame, plan, seed_key))


def outcome_counts(frame: pd.DataFrame, plan: ScanPlan) -> dict[str, OutcomeCounts]:
    """(label, prediction) counts of every row and of each slice of ``plan``."""
    y_true = frame[plan.label] if plan.label and plan.label in frame else None
    y_pred = frame[plan.prediction] if plan.prediction and plan.prediction in frame else None
    pairs, codes = OutcomeCounts.pair_codes(y_true, y_pred, len(frame))  # once; each slice is a bincount
    out = {ALL_ROWS: OutcomeCounts.from_codes(pairs, codes)}
    for name, expression in plan.slices.items():
        mask = evaluate(expression, frame).to_numpy(dtype=bool)
        out[name] = OutcomeCounts.from_codes(pairs, codes[mask])
    return out


def _bernoulli(frame: pd.DataFrame, plan: ScanPlan, seed_key: tuple[int, ...]) -> pd.DataFrame:
    """Each row kept with probability ``sample_fraction``, independently of every other batch:
    a uniform sample of the dataset whose seed depends only on the plan and the batch's position."""
    if plan.sample_fraction <= 0:
        return _as_read(frame.iloc[:0])
    if plan.sample_fraction >= 1:
        return _as_read(frame.reset_index(drop=True))
    rng = np.random.default_rng([plan.random_state, *seed_key])
    return _as_read(frame[rng.random(len(frame)) < plan.sample_fraction].reset_index(drop=True))


def _as_read(frame: pd.DataFrame) -> pd.DataFrame:
    """Strings as the pandas engine reads them (object), not as the categoricals a batch uses."""
    categorical = [c for c in frame.columns if isinstance(frame[c].dtype, pd.CategoricalDtype)]
    return frame.astype({c: object for c in categorical}) if categorical else frame


def scan_files(client: Any, files: list[str], plan: ScanPlan, progress=None) -> Scan:
    """Scan every file on the cluster and merge the results as they arrive."""
    # lazy: dask.distributed (~1 s); the pandas engine's audits import this module (through exact) too
    from distributed import as_completed

    futures = client.map(scan_partition, files, [plan] * len(files), list(range(len(files))), pure=False)
    merged: Scan | None = None
    done = 0
    for future in as_completed(futures, loop=client.loop):
        part = future.result()
        future.release()  # the partition's scan leaves the worker's memory
        merged = part if merged is None else merged.merge(part)
        done += 1
        if progress is not None:
            progress(done / len(files))
    assert merged is not None  # the files of a ParquetDataset, never none (ParquetDataset.from_files)
    return merged
