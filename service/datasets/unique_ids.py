"""Are an id column's values unique across every chunk of an upload, in bounded memory?

An in-memory set of the ids seen grows with the file (measured: about 80 bytes of peak memory per
row with a set of sorted 64-bit hashes, through the merge copies and allocator fragmentation).
Instead each chunk's ids are hashed to 64 bits and spilled, with their row numbers, to
``BUCKETS`` files on disk chosen by the hash's top bits; at the end each bucket is sorted on its
own. Equal ids have equal hashes and so meet in one bucket: memory is one bucket, about
16 x rows / 256 bytes (3 MB at 50 M rows), and disk 16 bytes per row until the upload ends.

Two different ids share a hash with probability about n²/2⁶⁵ (7e-5 at 50 M rows); that would
report a duplicate that is not one, naming both rows so it can be checked.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

BUCKETS = 256
RECORD = np.dtype([("hash", "<u8"), ("row", "<u8")])


def _as_text(values: pd.Series) -> pd.Series:
    if pd.api.types.is_float_dtype(values) and len(values) and bool((values == np.floor(values)).all()) \
            and float(values.abs().max()) < 2**63:
        values = values.astype("int64")
    return values.astype(str)


def value_hashes(series: pd.Series | pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """64-bit hashes of the non-null values and their positions in ``series``.

    Hashed as text, so that 123, 123.0 and "123" are one id, as :func:`service.datasets.coerce.coerce_columns`
    would make them once a later chunk turns the column into text. A frame (e.g. id and annotator,
    when several annotators label one item) is hashed row by row, over its rows without a null.
    """
    if isinstance(series, pd.DataFrame):
        present = series.notna().all(axis=1).to_numpy()
        values = pd.DataFrame({c: _as_text(series.loc[present, c]) for c in series.columns})
    else:
        present = series.notna().to_numpy()
        values = _as_text(series[present])
    hashes = pd.util.hash_pandas_object(values, index=False).to_numpy()
    return hashes, np.flatnonzero(present)


class SpilledIds:
    """Add chunks of one column (or of the columns that together must be unique) with :meth:`add`;
    :meth:`duplicates` at the end."""

    def __init__(self, directory: Path | None = None) -> None:
        if directory is not None:
            Path(directory).mkdir(parents=True, exist_ok=True)
        self.directory = Path(tempfile.mkdtemp(prefix="ids-", dir=directory))

    def add(self, series: pd.Series | pd.DataFrame, first_row: int) -> None:
        """``first_row``: the 0-based row number in the file of ``series``' first value."""
        hashes, positions = value_hashes(series)
        records = np.empty(len(hashes), dtype=RECORD)
        records["hash"], records["row"] = hashes, positions + first_row
        bucket = (hashes >> np.uint64(64 - 8)).astype(np.int64)  # 256 buckets: the top 8 bits
        order = np.argsort(bucket, kind="stable")
        records, bucket = records[order], bucket[order]
        bounds = np.searchsorted(bucket, np.arange(BUCKETS + 1))
        for b in range(BUCKETS):
            if bounds[b + 1] > bounds[b]:
                with open(self.directory / f"{b:03d}", "ab") as out:
                    out.write(records[bounds[b]:bounds[b + 1]].tobytes())

    def duplicates(self, show: int = 10) -> tuple[int, list[list[int]]]:
        """How many rows repeat an earlier row's id, and up to ``show`` pairs of 1-based row
        numbers ``[first, repeat]``."""
        count = 0
        pairs: list[list[int]] = []
        for path in sorted(self.directory.iterdir()):
            records = np.fromfile(path, dtype=RECORD)
            records = records[np.lexsort((records["row"], records["hash"]))]
            repeat = np.flatnonzero(records["hash"][1:] == records["hash"][:-1]) + 1
            count += len(repeat)
            for at in repeat[:max(0, show - len(pairs))]:
                first = np.searchsorted(records["hash"], records["hash"][at])
                pairs.append([int(records["row"][first]) + 1, int(records["row"][at]) + 1])
        return count, sorted(pairs)[:show]

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
