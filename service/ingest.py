"""Reading uploaded files into tables, with a clear 4xx error for every way they can be bad.

Formats (SPEC §3): CSV, Parquet, JSON Lines, each optionally gzip-compressed. The format
comes from the file name; the content must agree with it.
"""
from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import zlib
from pathlib import Path
from typing import BinaryIO

import pandas as pd

from service.errors import BadUpload, UnsupportedFormat, UploadTooLarge

FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl",
           ".ndjson": "jsonl"}
CHUNK = 1024 * 1024
GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"


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
                    details={"file": filename, "max_bytes": max_bytes})
            digest.update(chunk)
            out.write(chunk)
    if size == 0:
        raise BadUpload(f"File {filename!r} is empty.", code="empty_file", details={"file": filename})
    return digest.hexdigest(), size


def read_table(path: Path, filename: str) -> pd.DataFrame:
    """Parse the spooled upload at ``path``; raise a :class:`BadUpload` that names the fault."""
    fmt, gzipped = detect_format(filename)
    with open(path, "rb") as fh:
        head = fh.read(4)
    if gzipped and not head.startswith(GZIP_MAGIC):
        raise BadUpload(f"File {filename!r} ends in .gz but is not gzip data.", code="invalid_gzip",
                        details={"file": filename})
    try:
        if fmt == "parquet":
            frame = _read_parquet(path, gzipped, filename)
        elif fmt == "csv":
            frame = _read_csv(path, gzipped, filename)
        else:
            frame = _read_jsonl(path, gzipped, filename)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise BadUpload(f"File {filename!r} is not valid gzip data (truncated or corrupt): {exc}",
                        code="invalid_gzip", details={"file": filename}) from None
    return _check_frame(frame, filename)


def _open_text(path: Path, gzipped: bool):
    raw = gzip.open(path, "rb") if gzipped else open(path, "rb")
    return raw


def _check_text_start(raw: bytes, filename: str) -> None:
    if b"\x00" in raw[:8192] or raw.startswith(PARQUET_MAGIC):
        raise BadUpload(f"File {filename!r} looks binary, not text: does its extension match "
                        "its content?", code="invalid_content", details={"file": filename})


def _read_csv(path: Path, gzipped: bool, filename: str) -> pd.DataFrame:
    with _open_text(path, gzipped) as fh:
        first = fh.read(65536)
    _check_text_start(first, filename)
    header_line = first.split(b"\n", 1)[0]
    try:
        header = next(csv.reader([header_line.decode("utf-8-sig")]), [])
    except UnicodeDecodeError as exc:
        raise _encoding_error(filename, exc, line=1) from None
    duplicates = sorted({c for c in header if header.count(c) > 1})
    if duplicates:
        raise BadUpload(f"File {filename!r} has duplicate column names: {duplicates}.",
                        code="duplicate_columns", details={"file": filename, "columns": duplicates})
    try:
        with _open_text(path, gzipped) as fh:
            return pd.read_csv(fh, encoding="utf-8-sig", low_memory=False)
    except UnicodeDecodeError as exc:
        raise _encoding_error(filename, exc) from None
    except pd.errors.EmptyDataError:
        raise BadUpload(f"File {filename!r} has no columns.", code="empty_file",
                        details={"file": filename}) from None
    except pd.errors.ParserError as exc:
        raise BadUpload(f"File {filename!r} is not valid CSV: {exc}", code="invalid_csv",
                        details={"file": filename, "parser": str(exc)}) from None


def _encoding_error(filename: str, exc: UnicodeDecodeError, line: int | None = None) -> BadUpload:
    return BadUpload(f"File {filename!r} is not UTF-8 text (byte offset {exc.start}); save it as "
                     "UTF-8.", code="invalid_encoding",
                     details={"file": filename, "byte_offset": exc.start, "line": line})


def _read_parquet(path: Path, gzipped: bool, filename: str) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if gzipped:
            with gzip.open(path, "rb") as fh:
                table = pq.read_table(io.BytesIO(fh.read()))
        else:
            table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        if isinstance(exc, (gzip.BadGzipFile, EOFError)):
            raise
        raise BadUpload(f"File {filename!r} is not a readable Parquet file (truncated or not "
                        f"Parquet): {exc}", code="invalid_parquet", details={"file": filename}) from None
    names = table.column_names
    duplicates = sorted({c for c in names if names.count(c) > 1})
    if duplicates:
        raise BadUpload(f"File {filename!r} has duplicate column names: {duplicates}.",
                        code="duplicate_columns", details={"file": filename, "columns": duplicates})
    return table.to_pandas()


def _read_jsonl(path: Path, gzipped: bool, filename: str) -> pd.DataFrame:
    records = []
    with _open_text(path, gzipped) as fh:
        for number, raw in enumerate(fh, start=1):
            if number == 1:
                _check_text_start(raw, filename)
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise _encoding_error(filename, exc, line=number) from None
            except json.JSONDecodeError as exc:
                raise BadUpload(f"File {filename!r}, line {number}: not valid JSON ({exc.msg}).",
                                code="invalid_jsonl", details={"file": filename, "line": number}) from None
            if not isinstance(record, dict):
                raise BadUpload(f"File {filename!r}, line {number}: each line must be a JSON object.",
                                code="invalid_jsonl", details={"file": filename, "line": number})
            records.append(record)
    return pd.DataFrame.from_records(records)


def _check_frame(frame: pd.DataFrame, filename: str) -> pd.DataFrame:
    if frame.shape[1] == 0:
        raise BadUpload(f"File {filename!r} has no columns.", code="empty_file", details={"file": filename})
    if len(frame) == 0:
        raise BadUpload(f"File {filename!r} has a header but no rows.", code="no_rows",
                        details={"file": filename, "columns": [str(c) for c in frame.columns]})
    frame.columns = [str(c) for c in frame.columns]
    return frame
