"""A Parquet manifest or image table, checked on its metadata before any value is read.

A 962 KB Parquet file can hold a 1 GB cell or an image column of 10⁸ rows; ``read_table`` would
materialise either before a limit could look at it. Here the footer is read alone (its length
bounded first) and from it: the row count against ``CONTEXTSHIFT_MAX_IMAGES``, the columns
against ``CONTEXTSHIFT_MAX_COLUMNS``, the uncompressed size of the non-image columns against
``CONTEXTSHIFT_MAX_DECOMPRESSED_MB`` and that of each row group's image column against
:data:`ROW_GROUP_IMAGE_BYTES`. Only then is the table read: its other columns at once (small,
they are metadata), and the image bytes one row group at a time, as rows ask for them
(:class:`ParquetImages`), so memory holds one row group of images, never the column.

Sizes come from the file's metadata as its writer recorded them.
"""
from __future__ import annotations

from bisect import bisect_right
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.types as t

from service.datasets.bounded import MB, UploadLimits
from service.datasets.images.derive import check_count
from service.datasets.images.sources import IMAGE_COLUMN, Archive, ImageLimits, Loader
from service.datasets.ingest_formats import FOOTER_BYTES_PER_COLUMN
from service.disconnect import check_client
from service.errors import BadUpload, InvalidRequest, UploadTooLarge

__all__ = ["ROW_GROUP_IMAGE_BYTES", "ParquetImages", "read_parquet_manifest"]

ROW_GROUP_IMAGE_BYTES = 256 * MB  # image bytes of one row group held at once (Hugging Face writes ~100 rows)


def _invalid(filename: str, exc: Exception) -> BadUpload:
    return BadUpload(f"File {filename!r} is not valid Parquet: {exc}", code="invalid_parquet",
                     details={"file": filename})


def _metadata(path: Path, filename: str, upload: UploadLimits):
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        fh.seek(max(size - 8, 0))
        tail = fh.read(8)
    footer = int.from_bytes(tail[:4], "little") if len(tail) == 8 and tail[4:] == b"PAR1" else -1
    if footer < 0:
        raise _invalid(filename, ValueError("no Parquet footer (truncated, or not Parquet)"))
    if footer > upload.max_columns * FOOTER_BYTES_PER_COLUMN:
        raise UploadTooLarge(f"File {filename!r} has Parquet metadata of {footer / MB:.1f} MB; write it with "
                             "fewer columns or row groups.", code="parquet_footer_too_large",
                             details={"file": filename, "limit": "CONTEXTSHIFT_MAX_COLUMNS"})
    try:
        return pq.read_metadata(path)
    except (pa.ArrowException, OSError) as exc:
        raise _invalid(filename, exc) from None


def _image_kind(schema: pa.Schema, filename: str) -> str:
    """``paths``, ``bytes`` or ``struct`` (``{bytes, path}``) for the ``image`` column."""
    kind = schema.field(IMAGE_COLUMN).type
    if t.is_string(kind) or t.is_large_string(kind):
        return "paths"
    if t.is_binary(kind) or t.is_large_binary(kind):
        return "bytes"
    if t.is_struct(kind) and kind.get_field_index("bytes") >= 0:
        return "struct"
    raise InvalidRequest(f"File {filename!r}: the {IMAGE_COLUMN!r} column is {kind}; it must hold paths (text), "
                         "image bytes, or {bytes, path} structs.", code="invalid_column_type",
                         details={"file": filename, "column": IMAGE_COLUMN, "type": str(kind)})


def _check_sizes(metadata, filename: str, upload: UploadLimits) -> None:
    other = 0
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        image = 0
        for j in range(group.num_columns):
            chunk = group.column(j)
            top = chunk.path_in_schema.split(".", 1)[0]
            if top == IMAGE_COLUMN:
                image += chunk.total_uncompressed_size
            else:
                other += chunk.total_uncompressed_size
        if image > ROW_GROUP_IMAGE_BYTES:
            raise UploadTooLarge(
                f"File {filename!r}: row group {g + 1} holds {image / MB:,.0f} MB of images, more than the "
                f"{ROW_GROUP_IMAGE_BYTES // MB} MB read at a time; write the file with smaller row groups "
                "(e.g. row_group_size=100) or smaller images.", code="row_group_too_large",
                details={"file": filename, "row_group": g + 1, "bytes": image, "max_bytes": ROW_GROUP_IMAGE_BYTES})
    if other > upload.max_decompressed_bytes:
        raise upload.too_much_data(filename)


def read_parquet_manifest(path: Path, filename: str, limits: ImageLimits,
                          upload: UploadLimits) -> tuple[pd.DataFrame, str]:
    """The manifest without its image bytes, and the image column's kind.

    For ``bytes`` and ``struct`` columns the frame's ``image`` column holds each row's path (the
    struct's ``path``, else ``None``); read the bytes with :class:`ParquetImages`.
    """
    metadata = _metadata(path, filename, upload)
    try:
        schema = metadata.schema.to_arrow_schema()
    except (pa.ArrowException, OSError) as exc:
        raise _invalid(filename, exc) from None
    upload.check_columns(filename, schema.names)
    if IMAGE_COLUMN not in schema.names:
        raise BadUpload(f"File {filename!r} has no {IMAGE_COLUMN!r} column naming each row's image.",
                        code="no_image_column", details={"file": filename})
    check_count(filename, metadata.num_rows, limits)  # from the footer, before a row is read
    upload.check_cells(filename, metadata.num_rows, len(schema.names))
    kind = _image_kind(schema, filename)
    _check_sizes(metadata, filename, upload)
    others = [n for n in schema.names if n != IMAGE_COLUMN]
    wanted = others + ([IMAGE_COLUMN] if kind == "paths" else [f"{IMAGE_COLUMN}.path"] if kind == "struct"
                       and schema.field(IMAGE_COLUMN).type.get_field_index("path") >= 0 else [])
    try:
        table = pq.read_table(path, columns=wanted)
    except (pa.ArrowException, OSError) as exc:
        raise _invalid(filename, exc) from None
    frame = table.select(others).to_pandas() if others else pd.DataFrame(index=range(metadata.num_rows))
    if kind == "paths":
        frame[IMAGE_COLUMN] = table.column(IMAGE_COLUMN).to_pandas()
    elif len(wanted) > len(others):
        frame[IMAGE_COLUMN] = table.column(len(others)).to_pandas()
    else:
        frame[IMAGE_COLUMN] = None
    return frame, kind


class ParquetImages:
    """The image bytes of a Parquet file's ``image`` column, one row group in memory at a time.

    Rows are asked for in order (the derivation reads its loaders in order), so each row group
    is read once.
    """

    def __init__(self, path: Path, filename: str, limits: ImageLimits, archive: Archive | None = None) -> None:
        self.file = pq.ParquetFile(path)
        self.filename = filename
        self.limits = limits
        self.archive = archive
        self.starts = [0]
        for g in range(self.file.metadata.num_row_groups):
            self.starts.append(self.starts[-1] + self.file.metadata.row_group(g).num_rows)
        self._group: int | None = None
        self._cells: list[Any] = []

    def _cell(self, row: int) -> Any:
        group = bisect_right(self.starts, row) - 1
        if group != self._group:
            check_client()
            self._cells = []  # drop the previous group before reading the next
            try:
                self._cells = self.file.read_row_group(group, columns=[IMAGE_COLUMN]).column(0).to_pylist()
            except (pa.ArrowException, OSError) as exc:
                raise _invalid(self.filename, exc) from None
            self._group = group
        return self._cells[row - self.starts[group]]

    def loader(self, row: int) -> Loader:
        def load() -> bytes:
            cell = self._cell(row)
            if isinstance(cell, dict):
                data = cell.get("bytes")
                if data is None and cell.get("path") and self.archive is not None:
                    return self.archive.loader(cell["path"])()
                cell = data
            if isinstance(cell, (bytes, bytearray, memoryview)):
                if len(cell) > self.limits.max_bytes:
                    raise ValueError(f"too_many_bytes: {len(cell)} bytes (max {self.limits.max_bytes})")
                return bytes(cell)
            raise ValueError("no_bytes: the image cell holds no bytes")
        return load

    def loaders(self) -> list[Loader]:
        return [self.loader(i) for i in range(self.starts[-1])]
