"""A dataset on disk as Parquet part files: writing them with bounded memory, reading them back.

A stored dataset is ``datasets/<id>/part-00000.parquet``, ``part-00001.parquet``, ... each of at
most ``CONTEXTSHIFT_PARTITION_ROWS`` rows, all with one Arrow schema so that pandas, pyarrow and
Dask read them as one table. Datasets stored before partitioning are one ``datasets/<id>.parquet``
file and read the same way. Registered datasets are the user's own files, never written here.
"""
from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from service.datasets.arrow_types import conform, unify

PART_NAME = "part-{:05d}.parquet"
FOOTER_TAIL = 8  # 4-byte little-endian footer length, then b"PAR1"


class PartWriter:
    """Tables in, part files of at most ``partition_rows`` rows out, all of one schema.

    Only the chunk being written is in memory: each ``write`` appends row groups to the open
    part. When a later chunk needs a wider type (see :mod:`service.datasets.arrow_types`), the open part
    is closed and a new one starts with the wider schema; :meth:`finish` then rewrites the
    earlier parts to it, one row group at a time.
    """

    def __init__(self, directory: Path, partition_rows: int) -> None:
        self.directory = Path(directory)
        self.partition_rows = int(partition_rows)
        self.schema: pa.Schema | None = None
        self.parts: list[tuple[Path, pa.Schema]] = []
        self.n_rows = 0
        self._writer: pq.ParquetWriter | None = None
        self._rows_in_part = 0

    def write(self, table: pa.Table) -> None:
        if self.schema is None:
            self.schema = table.schema
        else:
            wider = unify(self.schema, table.schema)
            if not wider.equals(self.schema):
                self._close_part()  # the open part keeps the old schema; finish() rewrites it
                self.schema = wider
            table = conform(table, self.schema)
        offset = 0
        while offset < table.num_rows:
            writer = self._writer if self._writer is not None else self._open_part()
            take = min(self.partition_rows - self._rows_in_part, table.num_rows - offset)
            writer.write_table(table.slice(offset, take))
            self._rows_in_part += take
            self.n_rows += take
            offset += take
            if self._rows_in_part >= self.partition_rows:
                self._close_part()

    def finish(self) -> list[Path]:
        """Close the last part, bring every part to the final schema, fsync; the part paths."""
        if not self.parts and self.schema is not None:  # no rows: one empty part keeps the columns
            self._open_part().write_table(self.schema.empty_table())
        self._close_part()
        for path, schema in self.parts:
            if not schema.equals(self.schema):
                _rewrite(path, self.schema)
            _fsync(path)
        return [path for path, _ in self.parts]

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _open_part(self) -> pq.ParquetWriter:
        """Start the next part; its writer, also kept as ``_writer``."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / PART_NAME.format(len(self.parts))
        self._writer = writer = pq.ParquetWriter(path, self.schema)
        self.parts.append((path, self.schema))
        self._rows_in_part = 0
        return writer

    def _close_part(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def _rewrite(path: Path, schema: pa.Schema) -> None:
    tmp = path.with_name(path.name + ".widen")
    source = pq.ParquetFile(path)
    with pq.ParquetWriter(tmp, schema) as out:
        for index in range(source.num_row_groups):
            out.write_table(conform(source.read_row_group(index), schema))
    source.close()
    os.replace(tmp, path)


def _fsync(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def write_frame(frame: pd.DataFrame, writer: PartWriter) -> None:
    """An in-memory frame as parts: converted once, so every part has the same schema."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    for start in range(0, max(table.num_rows, 1), writer.partition_rows):
        writer.write(table.slice(start, writer.partition_rows))


def decimals_as_float(table: pa.Table) -> pa.Table:
    """Decimal columns as float64: Decimal objects would turn into text downstream."""
    for index, field in enumerate(table.schema):
        if pa.types.is_decimal(field.type):
            table = table.set_column(index, field.name, table.column(index).cast(pa.float64()))
    return table


def read_parts(files: list[Path], columns: list[str] | None = None) -> pd.DataFrame:
    """All parts as one frame (the pandas engine); a stored index is dropped as uploads drop it."""
    table = decimals_as_float(ds.dataset([str(f) for f in files], format="parquet").to_table(columns=columns))
    frame = table.to_pandas()
    if not isinstance(frame.index, pd.RangeIndex) or frame.index.start != 0:
        frame = frame.reset_index(drop=True)
    return frame


def read_footer(path: Path) -> bytes:
    """The Parquet footer (file metadata) of ``path``, with its length and magic; ValueError if none."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        if size < 12 or fh.read(4) != b"PAR1":
            raise ValueError("not a Parquet file")
        fh.seek(size - FOOTER_TAIL)
        length, magic = struct.unpack("<I4s", fh.read(FOOTER_TAIL))
        if magic != b"PAR1" or length > size - 12:
            raise ValueError("not a Parquet file (no footer)")
        fh.seek(size - FOOTER_TAIL - length)
        return fh.read(length + FOOTER_TAIL)


def fingerprint(files: list[Path], base: Path) -> str:
    """sha256 over each file's path relative to ``base``, its size and its footer, sorted by path.

    The footer holds every row group's statistics and byte offsets, so a rewrite of any data
    shows; reading it costs one seek per file instead of a full read.
    """
    digest = hashlib.sha256()
    for path in sorted(files, key=lambda p: p.relative_to(base).as_posix()):
        digest.update(path.relative_to(base).as_posix().encode() + b"\x00")
        digest.update(str(path.stat().st_size).encode() + b"\x00")
        digest.update(read_footer(path))
    return digest.hexdigest()
