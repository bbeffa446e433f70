"""Reading uploaded files into tables, with a clear 4xx error for every way they can be bad.

Formats: CSV, Parquet, JSON Lines, each optionally gzip-compressed. The format
comes from the file name; the content must agree with it. Every reader is bounded
(:mod:`service.datasets.bounded`): decompressed bytes, rows x columns and cell size are counted
while reading, and the columns, column names and line lengths are checked on the raw bytes
before a parser sees them (:mod:`service.datasets.line_scan`), so a bomb is refused before it can
exhaust memory. Every reader
is also a generator of chunks of about ``chunk_cells`` cells: :func:`iter_chunks` feeds the
streamed upload (:mod:`service.datasets.upload`), :func:`read_table` concatenates them in memory.
"""
from __future__ import annotations

import csv
import functools
import gzip
import hashlib
import io
import zlib
from pathlib import Path
from typing import BinaryIO, Callable, Generator, Iterator

import pandas as pd

from service.datasets.bounded import UploadLimits, check_text_start, open_bounded, open_range
from service.datasets.coerce import check_text_cells, coerce_columns
from service.datasets.csv_dialect import HOW, Dialect, sniff_dialect
from service.datasets.images.sources import ARCHIVE_SUFFIXES
from service.datasets.ingest_formats import iter_jsonl, iter_parquet
from service.datasets.line_scan import Scan, encoding_error, scanned, sniff_csv_header
from service.errors import BadUpload, UnsupportedFormat, UploadTooLarge

FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl",
           ".ndjson": "jsonl"}
CHUNK = 1024 * 1024
CHUNK_CELLS = 1_000_000  # cells parsed between two limit checks
GZIP_MAGIC = b"\x1f\x8b"
# the csv module's own 128 KiB field cap would refuse valid long cells; our limits are
# max_line_bytes (checked on the bytes first) and max_cell_chars
csv.field_size_limit(2**31 - 1)


def detect_format(filename: str) -> tuple[str, bool]:
    """Return ``(format, gzipped)`` from the file name, or raise :class:`UnsupportedFormat`."""
    name = (filename or "").lower()
    gzipped = name.endswith(".gz")
    if gzipped:
        name = name[:-3]
    suffix = Path(name).suffix
    if suffix in ARCHIVE_SUFFIXES and not gzipped:  # images plus a manifest: service.datasets.images.intake
        return "archive", False
    if suffix not in FORMATS:
        raise UnsupportedFormat(
            f"File {filename!r} has an unsupported extension; use .csv, .parquet or .jsonl "
            "(optionally .gz), or .zip/.tar of images with a manifest.",
            details={"file": filename, "supported": sorted(FORMATS)})
    return FORMATS[suffix], gzipped


def spool_to_disk(source: BinaryIO, target: Path, *, max_bytes: int, filename: str) -> tuple[str, int]:
    """Copy ``source`` to ``target`` in chunks, hashing and enforcing the size cap."""
    digest, size = hashlib.sha256(), 0
    with open(target, "wb") as out:
        while chunk := source.read(CHUNK):
            size += len(chunk)
            if size > max_bytes:
                raise UploadTooLarge(
                    f"File {filename!r} exceeds the upload limit of {max_bytes / 2**20:g} MB.",
                    details={"file": filename, "max_bytes": max_bytes, "limit": "CONTEXTSHIFT_MAX_UPLOAD_MB"})
            digest.update(chunk)
            out.write(chunk)
    if size == 0:
        raise BadUpload(f"File {filename!r} is empty.", code="empty_file", details={"file": filename})
    return digest.hexdigest(), size


def read_table(path: Path, filename: str, limits: UploadLimits | None = None,
               chunk_cells: int = CHUNK_CELLS, dialect: tuple[str | None, str | None] = (None, None)) -> pd.DataFrame:
    """Parse the spooled upload at ``path`` into memory; raise a :class:`BadUpload` that names the fault.

    Returns
    -------
    frame : DataFrame of shape (n_rows, n_columns)
        String column names; every object column holds one kind of value (see
        :func:`service.datasets.coerce.coerce_columns`).
    """
    chunks = list(iter_raw(path, filename, limits or UploadLimits(), chunk_cells, dialect))
    # chunks infer dtypes on their own; concat widens int+float and int+str as one read would
    frame = pd.concat(chunks, ignore_index=True, copy=False) if len(chunks) > 1 else chunks[0]
    frame = _check_frame(frame, filename)
    return coerce_columns(frame, filename)


def iter_chunks(path: Path, filename: str, limits: UploadLimits | None = None,
                chunk_cells: int = CHUNK_CELLS,
                dialect: tuple[str | None, str | None] = (None, None)) -> Generator[pd.DataFrame, None, None]:
    """The upload as typed frames of about ``chunk_cells`` cells each, for streaming to parts.

    The first chunk fixes the columns (roles are inferred from it); a later chunk may lack a
    JSON key (the column is null there) but not add one (422 ``inconsistent_columns``: the parts
    already written could not hold it). Dtypes may still drift between chunks; see
    :mod:`service.datasets.arrow_types`.
    """
    columns: list[str] | None = None
    for chunk in iter_raw(path, filename, limits or UploadLimits(), chunk_cells, dialect):
        if columns is None:
            columns = list(_check_frame(chunk, filename).columns)
        elif len(chunk) == 0:
            continue
        else:
            chunk = _align(chunk, columns, filename)
        yield coerce_columns(chunk, filename)


def _align(chunk: pd.DataFrame, columns: list[str], filename: str) -> pd.DataFrame:
    chunk.columns = [str(c) for c in chunk.columns]
    extra = [c for c in chunk.columns if c not in set(columns)]
    if extra:
        first = int(chunk.index[0]) + 1
        raise BadUpload(f"File {filename!r}: records from row {first} on have keys the first rows lack: "
                        f"{extra[:20]}; put every key in the first records, or upload CSV or Parquet.",
                        code="inconsistent_columns", details={"file": filename, "columns": extra[:100], "row": first})
    return chunk.reindex(columns=columns) if list(chunk.columns) != columns else chunk


def iter_raw(path: Path, filename: str, limits: UploadLimits, chunk_cells: int = CHUNK_CELLS,
             dialect: tuple[str | None, str | None] = (None, None)) -> Iterator[pd.DataFrame]:
    """Untyped frames straight from the parser, limits checked; at least one (maybe with no rows).
    ``dialect``: a CSV's (delimiter, decimal mark) as the user named them; None: sniffed."""
    fmt, gzipped = detect_format(filename)
    with open(path, "rb") as fh:
        head = fh.read(4)
    if gzipped and not head.startswith(GZIP_MAGIC):
        raise BadUpload(f"File {filename!r} ends in .gz but is not gzip data.", code="invalid_gzip",
                        details={"file": filename})
    readers: dict[str, Callable[..., Iterator[pd.DataFrame]]] = {
        "parquet": iter_parquet, "csv": functools.partial(_iter_csv, dialect=dialect), "jsonl": iter_jsonl}
    try:
        yield from readers[fmt](path, gzipped, filename, limits, chunk_cells)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise BadUpload(f"File {filename!r} is not valid gzip data (truncated or corrupt): {exc}",
                        code="invalid_gzip", details={"file": filename}) from None


def _iter_csv(path: Path, gzipped: bool, filename: str, limits: UploadLimits,
              chunk_cells: int, dialect: tuple[str | None, str | None] = (None, None)) -> Iterator[pd.DataFrame]:
    check_text_start(path, gzipped, limits, filename)
    found = sniff_dialect(path, gzipped, limits, filename, *dialect)
    header = sniff_csv_header(path, gzipped, limits, filename, found.delimiter)
    duplicates = sorted(c for c, n in pd.Series(header).value_counts().items() if n > 1)
    if duplicates:
        raise BadUpload(f"File {filename!r} has duplicate column names: {duplicates[:20]}.",
                        code="duplicate_columns", details={"file": filename, "columns": duplicates[:100]})
    limits.check_cells(filename, 1, len(header))
    # every record's length and the row count, on the bytes: pandas holds a whole line at once
    with scanned(path, gzipped, limits, filename, quoted=True, n_columns=len(header),
                 header_records=1) as (plain, scan):
        yield from _parse_csv(plain, scan, limits, filename, len(header), chunk_cells, found)


def _parse_csv(path: Path, scan: Scan, limits: UploadLimits, filename: str, n_columns: int,
               chunk_cells: int, dialect: Dialect = Dialect()) -> Iterator[pd.DataFrame]:
    """pandas on the plain file that :func:`service.datasets.line_scan.scanned` checked, one byte range
    (split at record ends) at a time, so a chunk holds at most ``chunk_cells`` cells and about
    ``CHUNK_BYTES`` of text. Every range after the first is read behind the header's own bytes:
    pandas then names, types and checks its rows exactly as in one read."""
    rows_per_chunk = max(1, chunk_cells // max(n_columns, 1))
    n_rows, has_nulls = 0, False
    with open(path, "rb") as fh:
        header = fh.read(scan.first_stop)
    try:
        for start, stop in scan.ranges:
            prefix = header if start > 0 else b""
            with open_range(path, start, stop, prefix) as fh:
                for chunk in pd.read_csv(fh, encoding="utf-8-sig", low_memory=False, chunksize=rows_per_chunk,
                                         sep=dialect.delimiter, decimal=dialect.decimal):
                    chunk.index = pd.RangeIndex(n_rows, n_rows + len(chunk))
                    check_text_cells(chunk, limits, filename, first_row=n_rows + 1)
                    n_rows += len(chunk)
                    limits.check_cells(filename, n_rows, chunk.shape[1])
                    has_nulls = has_nulls or bool(chunk.isna().to_numpy().any())
                    yield chunk
    except UnicodeDecodeError as exc:
        raise encoding_error(filename, exc) from None
    except pd.errors.EmptyDataError:
        raise BadUpload(f"File {filename!r} has no columns.", code="empty_file",
                        details={"file": filename}) from None
    except pd.errors.ParserError as exc:
        raise BadUpload(f"File {filename!r} is not valid CSV ({dialect.describe()}): {exc}; if that is not the "
                        f"file's dialect, {HOW}.", code="invalid_csv",
                        details={"file": filename, "parser": str(exc), "delimiter": dialect.delimiter,
                                 "decimal": dialect.decimal}) from None
    if has_nulls:  # a short row parses as trailing nulls: find it, name it
        _check_ragged(path, False, limits, filename, n_columns, dialect)


def _check_ragged(path: Path, gzipped: bool, limits: UploadLimits, filename: str, n_columns: int,
                  dialect: Dialect = Dialect()) -> None:
    with open_bounded(path, gzipped, limits, filename) as raw:
        reader = csv.reader(io.TextIOWrapper(raw, encoding="utf-8-sig", newline=""), delimiter=dialect.delimiter)
        for record in reader:
            if record and len(record) != n_columns:
                line = reader.line_num
                raise BadUpload(
                    f"File {filename!r}, line {line}: {len(record)} field(s) where the header has "
                    f"{n_columns} (read with {dialect.describe()}); if that is not the file's dialect, {HOW}.",
                    code="ragged_row",
                    details={"file": filename, "line": line, "fields": len(record), "expected": n_columns,
                             "delimiter": dialect.delimiter, "decimal": dialect.decimal})


def _check_frame(frame: pd.DataFrame, filename: str) -> pd.DataFrame:
    if frame.shape[1] == 0:
        raise BadUpload(f"File {filename!r} has no columns.", code="empty_file", details={"file": filename})
    if len(frame) == 0:
        raise BadUpload(f"File {filename!r} has a header but no rows.", code="no_rows",
                        details={"file": filename, "columns": [str(c) for c in frame.columns]})
    frame.columns = [str(c) for c in frame.columns]
    return frame
