"""Parquet datasets as the Dask engine sees them: a list of files, read lazily."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from service.datasets.paths import parquet_files as resolve
from service.errors import InvalidRequest

PARQUET_SUFFIXES = (".parquet", ".pq")


class EmptyDataset(ValueError):
    """Every Parquet file of a dataset is empty: there is nothing to audit."""


@dataclass(frozen=True)
class ParquetDataset:
    """The files of one dataset with what their footers say (no row is read)."""

    name: str
    files: tuple[str, ...]  # the files that hold rows; an empty one changes only the fingerprint
    n_rows: int
    columns: tuple[str, ...]
    numeric: tuple[str, ...]  # numeric, non-boolean columns (sketched)
    fingerprint: str  # sha256 of relative paths, sizes and footers: changes when any file changes

    @classmethod
    def open(cls, path: str | Path, *, name: str | None = None) -> "ParquetDataset":
        files = parquet_files(path)
        return cls.from_files(files, name=name or Path(str(path).rstrip("/*")).name)

    @classmethod
    def from_files(cls, files, *, name: str) -> "ParquetDataset":
        files = [str(f) for f in files]
        if not files:
            raise ValueError(f"dataset {name!r} has no Parquet files.")
        digest, n_rows, schema, with_rows = hashlib.sha256(), 0, None, []
        for f in files:
            meta = pq.read_metadata(f)
            n_rows += meta.num_rows
            if meta.num_rows:  # an empty part (a writer that had nothing to write) adds no rows and no batch
                with_rows.append(f)
            file_schema = meta.schema.to_arrow_schema()
            if schema is None:
                schema = file_schema
            elif file_schema.names != schema.names:
                raise ValueError(f"dataset {name!r}: {Path(f).name} has columns {file_schema.names}, "
                                 f"the first file {schema.names}.")
            digest.update(f"{Path(f).name}:{Path(f).stat().st_size}:{meta.num_rows}:{meta.serialized_size}".encode())
        assert schema is not None  # files is not empty, so the loop set it
        if not with_rows:
            raise EmptyDataset(f"dataset {name!r} has no rows: its {len(files)} Parquet file(s) are empty.")
        numeric = tuple(fld.name for fld in schema if (pa.types.is_integer(fld.type) or pa.types.is_floating(fld.type)
                                                       or pa.types.is_decimal(fld.type)))
        columns = tuple(c for c in schema.names if not c.startswith("__index_level_"))
        return cls(name, tuple(with_rows), n_rows, columns, numeric, digest.hexdigest())

    def head(self, n: int = 1000):
        """The first ``n`` rows (for column roles and types)."""
        batches = pq.ParquetFile(self.files[0]).iter_batches(batch_size=n)
        frame = next(batches).to_pandas()
        return frame[[c for c in frame.columns if c in self.columns]]



def parquet_files(path: str | Path) -> list[str]:
    """A Parquet file, a directory of them or a glob (the same rule as uploads and the CLI,
    :func:`service.datasets.paths.parquet_files`); anything that is not Parquet is refused."""
    files = [str(f) for f in resolve(path)]
    others = [f for f in files if Path(f).suffix not in PARQUET_SUFFIXES]
    if others:
        raise InvalidRequest(f"The Dask engine reads Parquet; {Path(others[0]).name!r} is not (.parquet, .pq).",
                             code="not_parquet", details={"file": others[0]})
    return files
