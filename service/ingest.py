"""Reading uploaded files into tables, with a clear 4xx error for every way they can be bad.

Formats (SPEC §3): CSV, Parquet, JSON Lines, each optionally gzip-compressed. The format
comes from the file name; the content must agree with it. Every reader is bounded
(:mod:`service.bounded`): decompressed bytes, rows x columns and cell size are counted
while reading, so an expansion bomb is refused before it can exhaust memory.
"""
from __future__ import annotations

import csv
import gzip
import hashlib
import io
import zlib
from pathlib import Path
from typing import BinaryIO

import pandas as pd

from service.bounded import UploadLimits, open_bounded
from service.coerce import check_text_cells, coerce_columns
from service.errors import BadUpload, UnsupportedFormat, UploadTooLarge

FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl",
           ".ndjson": "jsonl"}
CHUNK = 1024 * 1024
CHUNK_CELLS = 1_000_000  # cells parsed between two limit checks
GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
# the csv module's own 128 KiB field cap would refuse valid wide headers; our limits are
# the decompressed-bytes counter and max_cell_chars, checked separately
csv.field_size_limit(2**31 - 1)


def detect_format(filename: str) -> tuple[str, bool]:
    """Return ``(format, gzipped)`` from the file name, or raise :class:`UnsupportedFormat`."""
    name = (filename or "").lower()
    gzipped = name.endswith(".gz")
    if gzipped:
        name = name[:-3]
    suffix = Path(name).suffix
    if suffix not in FORMATS:
        raise UnsupportedFormat(
            f"File {filename!r} has an unsupported extension; use .csv, .parquet or .jsonl "
            "(optionally .gz).", details={"file": filename, "supported": sorted(FORMATS)})
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


def read_table(path: Path, filename: str, limits: UploadLimits | None = None) -> pd.DataFrame:
    """Parse the spooled upload at ``path``; raise a :class:`BadUpload` that names the fault.

    Returns
    -------
    frame : DataFrame of shape (n_rows, n_columns)
        String column names; every object column holds one kind of value (see
        :func:`service.coerce.coerce_columns`).
    """
    from service.ingest_formats import read_jsonl, read_parquet

    limits = limits or UploadLimits()
    fmt, gzipped = detect_format(filename)
    with open(path, "rb") as fh:
        head = fh.read(4)
    if gzipped and not head.startswith(GZIP_MAGIC):
        raise BadUpload(f"File {filename!r} ends in .gz but is not gzip data.", code="invalid_gzip",
                        details={"file": filename})
    try:
        if fmt == "parquet":
            frame = read_parquet(path, gzipped, filename, limits)
        elif fmt == "csv":
            frame = _read_csv(path, gzipped, filename, limits)
        else:
            frame = read_jsonl(path, gzipped, filename, limits)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise BadUpload(f"File {filename!r} is not valid gzip data (truncated or corrupt): {exc}",
                        code="invalid_gzip", details={"file": filename}) from None
    frame = _check_frame(frame, filename)
    return coerce_columns(frame, filename)


def check_text_start(path: Path, gzipped: bool, limits: UploadLimits, filename: str) -> None:
    with open_bounded(path, gzipped, limits, filename, buffer_size=8192) as fh:
        raw = fh.read(8192)
    if b"\x00" in raw or raw.startswith(PARQUET_MAGIC):
        raise BadUpload(f"File {filename!r} looks binary, not text: does its extension match "
                        "its content?", code="invalid_content", details={"file": filename})


def _csv_header(path: Path, gzipped: bool, limits: UploadLimits, filename: str) -> list[str]:
    """The first CSV record, however long (a 20,000-column header is well past 64 KiB)."""
    with open_bounded(path, gzipped, limits, filename) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
        try:
            return next(csv.reader(text), [])
        except UnicodeDecodeError as exc:
            raise encoding_error(filename, exc, line=1) from None
        except csv.Error as exc:
            raise BadUpload(f"File {filename!r} has an unreadable header: {exc}", code="invalid_csv",
                            details={"file": filename, "line": 1}) from None


def _read_csv(path: Path, gzipped: bool, filename: str, limits: UploadLimits) -> pd.DataFrame:
    check_text_start(path, gzipped, limits, filename)
    header = _csv_header(path, gzipped, limits, filename)
    duplicates = sorted({c for c in header if header.count(c) > 1}) if len(header) < 5000 else \
        sorted(c for c, n in pd.Series(header).value_counts().items() if n > 1)
    if duplicates:
        raise BadUpload(f"File {filename!r} has duplicate column names: {duplicates[:20]}.",
                        code="duplicate_columns", details={"file": filename, "columns": duplicates[:100]})
    limits.check_cells(filename, 1, len(header))
    rows_per_chunk = max(1, CHUNK_CELLS // max(len(header), 1))
    chunks, n_rows = [], 0
    try:
        with open_bounded(path, gzipped, limits, filename) as fh:
            for chunk in pd.read_csv(fh, encoding="utf-8-sig", low_memory=False, chunksize=rows_per_chunk):
                check_text_cells(chunk, limits, filename, first_row=n_rows + 1)
                n_rows += len(chunk)
                limits.check_cells(filename, n_rows, chunk.shape[1])
                chunks.append(chunk)
    except UnicodeDecodeError as exc:
        raise encoding_error(filename, exc) from None
    except pd.errors.EmptyDataError:
        raise BadUpload(f"File {filename!r} has no columns.", code="empty_file",
                        details={"file": filename}) from None
    except pd.errors.ParserError as exc:
        raise BadUpload(f"File {filename!r} is not valid CSV: {exc}", code="invalid_csv",
                        details={"file": filename, "parser": str(exc)}) from None
    frame = _concat(chunks, header)
    if frame.isna().to_numpy().any():  # a short row parses as trailing nulls: find it, name it
        _check_ragged(path, gzipped, limits, filename, len(header))
    return frame


def _concat(chunks: list[pd.DataFrame], header: list[str]) -> pd.DataFrame:
    if not chunks:
        return pd.DataFrame(columns=header)
    # chunks infer dtypes on their own; concat widens int+float and int+str as one read would
    return pd.concat(chunks, ignore_index=True, copy=False) if len(chunks) > 1 else chunks[0]


def _check_ragged(path: Path, gzipped: bool, limits: UploadLimits, filename: str, n_columns: int) -> None:
    with open_bounded(path, gzipped, limits, filename) as raw:
        reader = csv.reader(io.TextIOWrapper(raw, encoding="utf-8-sig", newline=""))
        for record in reader:
            if record and len(record) != n_columns:
                line = reader.line_num
                raise BadUpload(
                    f"File {filename!r}, line {line}: {len(record)} field(s) where the header has "
                    f"{n_columns}.", code="ragged_row",
                    details={"file": filename, "line": line, "fields": len(record), "expected": n_columns})


def encoding_error(filename: str, exc: UnicodeDecodeError, line: int | None = None) -> BadUpload:
    return BadUpload(f"File {filename!r} is not UTF-8 text (byte offset {exc.start}); save it as "
                     "UTF-8.", code="invalid_encoding",
                     details={"file": filename, "byte_offset": exc.start, "line": line})


def _check_frame(frame: pd.DataFrame, filename: str) -> pd.DataFrame:
    if frame.shape[1] == 0:
        raise BadUpload(f"File {filename!r} has no columns.", code="empty_file", details={"file": filename})
    if len(frame) == 0:
        raise BadUpload(f"File {filename!r} has a header but no rows.", code="no_rows",
                        details={"file": filename, "columns": [str(c) for c in frame.columns]})
    frame.columns = [str(c) for c in frame.columns]
    return frame
