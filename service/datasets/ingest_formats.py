"""JSON Lines and Parquet readers, chunk by chunk and bounded like the CSV one (see :mod:`service.datasets.bounded`)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.types as t

from service.datasets.bounded import MB, UploadLimits, check_text_start, decompress_to, open_bounded, scratch_copy
from service.datasets.coerce import check_text_cells
from service.datasets.line_scan import CHUNK_BYTES, encoding_error, scanned
from service.datasets.partitions import decimals_as_float
from service.errors import BadUpload, InvalidRequest, UploadTooLarge

JSONL_CHUNK_ROWS = 50_000
# a column's share of a Parquet footer: its schema entry plus one chunk entry (with min/max
# statistics, at most 4 KB each by default) per row group; 8 KB x 2,000 columns = 16 MB
FOOTER_BYTES_PER_COLUMN = 8 * 1024


def iter_jsonl(path: Path, gzipped: bool, filename: str, limits: UploadLimits,
               chunk_cells: int) -> Iterator[pd.DataFrame]:
    """One JSON object per line; records become a frame every ``JSONL_CHUNK_ROWS`` lines (fewer
    for wide records: about ``chunk_cells`` cells; fewer for long ones: about ``CHUNK_BYTES``),
    so only one chunk of records is in memory.

    The lines are scanned first (length, count: :func:`service.datasets.line_scan.scanned`), then
    read with a bounded ``readline`` (a gzipped file from its plain copy); the keys seen so far are
    the columns, checked against
    ``max_columns`` and ``max_column_name_chars`` record by record."""
    check_text_start(path, gzipped, limits, filename)
    with scanned(path, gzipped, limits, filename, quoted=False) as (plain, _):
        yield from _parse_jsonl(plain, limits, filename, chunk_cells)


def _parse_jsonl(path: Path, limits: UploadLimits, filename: str, chunk_cells: int) -> Iterator[pd.DataFrame]:
    records: list[dict] = []
    keys: set[str] = set()
    n_rows, n_columns, pending = 0, 0, 0
    with open_bounded(path, False, limits, filename) as fh:
        lines = iter(lambda: fh.readline(limits.max_line_bytes + 1), b"")
        for number, raw in enumerate(lines, start=1):
            if len(raw) > limits.max_line_bytes:
                raise limits.line_too_long(filename, number)
            if not raw.strip():
                continue
            record = _parse_line(raw, number, filename)
            if not keys.issuperset(record):
                _add_keys(keys, record, limits, filename)
            records.append(record)
            pending += len(raw)
            if pending >= CHUNK_BYTES or len(records) >= max(1, min(JSONL_CHUNK_ROWS,
                                                                      chunk_cells // max(n_columns, 1))):
                pending = 0
                chunk = _flush(records, limits, filename, n_rows, n_columns)
                n_rows, n_columns = n_rows + len(chunk), max(n_columns, chunk.shape[1])
                yield chunk
        if records:
            yield _flush(records, limits, filename, n_rows, n_columns)
        elif n_rows == 0:
            yield pd.DataFrame()


def _add_keys(keys: set[str], record: dict, limits: UploadLimits, filename: str) -> None:
    new = record.keys() - keys
    if len(keys) + len(new) > limits.max_columns:
        raise limits.too_many_columns(filename, len(keys) + len(new), at_least=True)
    limits.check_columns(filename, list(new))
    keys.update(new)


def _parse_line(raw: bytes, number: int, filename: str) -> dict:
    where = {"file": filename, "line": number}
    try:
        record = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise encoding_error(filename, exc, line=number) from None
    except json.JSONDecodeError as exc:
        raise BadUpload(f"File {filename!r}, line {number}: not valid JSON ({exc.msg}).",
                        code="invalid_jsonl", details=where) from None
    except RecursionError:  # the C decoder checks its depth; the interpreter's limit is the bound
        raise BadUpload(f"File {filename!r}, line {number}: JSON nested too deeply.",
                        code="invalid_jsonl", details=where) from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise BadUpload(f"File {filename!r}, line {number}: {exc}.", code="invalid_jsonl",
                        details=where) from None
    if not isinstance(record, dict):
        raise BadUpload(f"File {filename!r}, line {number}: each line must be a JSON object.",
                        code="invalid_jsonl", details=where)
    return record


def _flush(records: list[dict], limits: UploadLimits, filename: str, n_rows: int, n_columns: int) -> pd.DataFrame:
    chunk = pd.DataFrame.from_records(records)
    chunk.index = pd.RangeIndex(n_rows, n_rows + len(chunk))  # row numbers in errors count from the file's start
    records.clear()
    limits.check_cells(filename, n_rows + len(chunk), max(n_columns, chunk.shape[1]))
    check_text_cells(chunk, limits, filename, first_row=n_rows + 1)
    return chunk


def iter_parquet(path: Path, gzipped: bool, filename: str, limits: UploadLimits,
                 chunk_cells: int) -> Iterator[pd.DataFrame]:
    """Check the footer (size, rows x columns, types, names) before any row group is read, then
    hand over batches of about ``chunk_cells`` cells."""
    if not gzipped:
        yield from _iter_parquet_file(path, filename, limits, chunk_cells)
        return
    plain = scratch_copy(path, ".parquet")
    try:
        decompress_to(path, plain, limits, filename)
        yield from _iter_parquet_file(plain, filename, limits, chunk_cells)
    finally:
        plain.unlink(missing_ok=True)


def _iter_parquet_file(path: Path, filename: str, limits: UploadLimits, chunk_cells: int) -> Iterator[pd.DataFrame]:
    try:
        metadata = _footer(path, filename, limits)
        meta = pq.ParquetFile(path, metadata=metadata)
        schema = meta.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise BadUpload(f"File {filename!r} is not a readable Parquet file (truncated or not "
                        f"Parquet): {exc}", code="invalid_parquet", details={"file": filename}) from None
    names = schema.names
    limits.check_columns(filename, names)
    duplicates = sorted({c for c in names if names.count(c) > 1})
    if duplicates:
        raise BadUpload(f"File {filename!r} has duplicate column names: {duplicates}.",
                        code="duplicate_columns", details={"file": filename, "columns": duplicates})
    _check_footer(meta.metadata, filename, limits, len(names))
    _check_types(schema, filename)
    n_rows, batch_rows = 0, max(1, chunk_cells // max(len(names), 1))
    try:
        for batch in meta.iter_batches(batch_size=batch_rows):
            frame = decimals_as_float(pa.Table.from_batches([batch])).to_pandas()
            frame.index = pd.RangeIndex(n_rows, n_rows + len(frame))
            check_text_cells(frame, limits, filename, first_row=n_rows + 1)
            n_rows += len(frame)
            yield frame
    except (pa.ArrowException, OSError) as exc:
        raise BadUpload(f"File {filename!r} is not a readable Parquet file: {exc}", code="invalid_parquet",
                        details={"file": filename}) from None
    if n_rows == 0:
        yield schema.empty_table().to_pandas()


def _footer(path: Path, filename: str, limits: UploadLimits):
    """The footer's metadata, refused before decoding when its length is out of bounds and before
    the schema is built when it has too many columns (decoding 50,000 columns costs seconds)."""
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(size - 8, 0))
        tail = fh.read(8)
    bound = limits.max_columns * FOOTER_BYTES_PER_COLUMN
    footer = int.from_bytes(tail[:4], "little") if len(tail) == 8 and tail[4:] == b"PAR1" else 0
    if footer > bound:
        raise UploadTooLarge(
            f"File {filename!r} has Parquet metadata of {footer / MB:.1f} MB, more than "
            f"{limits.max_columns:,} columns need ({FOOTER_BYTES_PER_COLUMN // 1024} KB each, "
            "CONTEXTSHIFT_MAX_COLUMNS); write it with fewer columns or row groups.",
            code="parquet_footer_too_large",
            details={"file": filename, "limit": "CONTEXTSHIFT_MAX_COLUMNS", "footer_bytes": footer,
                     "max_footer_bytes": bound})
    metadata = pq.read_metadata(path)
    if metadata.num_columns > limits.max_columns:
        raise limits.too_many_columns(filename, metadata.num_columns)
    return metadata


def _check_footer(metadata, filename: str, limits: UploadLimits, n_columns: int) -> None:
    limits.check_cells(filename, metadata.num_rows, n_columns)
    expanded = sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
    if expanded > limits.max_decompressed_bytes:
        raise limits.too_much_data(filename)


def _supported(kind) -> bool:
    if t.is_dictionary(kind):
        return _supported(kind.value_type)
    if t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind):
        return t.is_integer(kind.value_type) or t.is_floating(kind.value_type)
    return any(check(kind) for check in (t.is_integer, t.is_floating, t.is_boolean, t.is_string,
                                         t.is_large_string, t.is_timestamp, t.is_date, t.is_null,
                                         t.is_decimal))


def _check_types(schema, filename: str) -> None:
    bad = {field.name: str(field.type) for field in schema if not _supported(field.type)}
    if bad:
        raise InvalidRequest(
            f"File {filename!r} has columns of types that cannot be audited: {bad}; use numbers, text, "
            "booleans, timestamps or numeric lists (embeddings).", code="invalid_column_type",
            details={"file": filename, "columns": bad})
