"""Data-quality warnings of a Parquet dataset on the Dask engine: values outside the pack's
declared ranges counted over every partition (the audit itself sees a sample), by the same rule
as an upload or the CLI (:mod:`service.datasets.frame_checks`). Reads only the ranged columns and the id."""
from __future__ import annotations

from typing import Any, Mapping

import pyarrow.parquet as pq

from audit.data_quality import RangeRule, RangeTally, range_rules
from service.audits.engine.datasets import ParquetDataset
from service.audits.engine.scan import BATCH_ROWS

__all__ = ["range_warnings"]


def _partition_tally(path: str, rules: list[RangeRule], id_column: str | None, first_row: int) -> RangeTally:
    tally = RangeTally(rules, id_column)
    columns = [r.column for r in rules] + ([id_column] if id_column else [])
    for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS, columns=columns):
        frame = batch.to_pandas()
        tally.add(frame, first_row)
        first_row += len(frame)
    return tally


def range_warnings(client: Any, dataset: ParquetDataset, pack: Any,
                   column_roles: Mapping[str, str]) -> list[dict[str, Any]]:
    """The out-of-range warnings of every row of ``dataset`` (row numbers run across its files)."""
    rules = range_rules(pack, dataset.head(100))
    if not rules:
        return []
    id_column = next((c for c, r in column_roles.items() if r == "id" and c in dataset.columns), None)
    offsets, start = [], 0
    for f in dataset.files:
        offsets.append(start)
        start += pq.read_metadata(f).num_rows
    n = len(dataset.files)
    futures = client.map(_partition_tally, list(dataset.files), [rules] * n, [id_column] * n, offsets, pure=False)
    total = RangeTally(rules, id_column)
    for tally in client.gather(futures):  # in file order: the rows shown are the first ones
        total.merge(tally)
    return [p.to_dict() for p in total.problems()]
