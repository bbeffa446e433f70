"""JSON Lines and Parquet readers, chunk by chunk and bounded like the CSV one (see :mod:`service.bounded`)."""
from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Iterator

import pandas as pd

from service.bounded import UploadLimits, decompress_to, open_bounded
from service.coerce import check_text_cells
from service.errors import BadUpload, InvalidRequest

JSONL_CHUNK_ROWS = 50_000


def iter_jsonl(path: Path, gzipped: bool, filename: str, limits: UploadLimits,
               chunk_cells: int) -> Iterator[pd.DataFrame]:
    """One JSON object per line; records become a frame every ``JSONL_CHUNK_ROWS`` lines (fewer
    for wide records: about ``chunk_cells`` cells), so only one chunk of records is in memory."""
    from service.ingest import check_text_start, encoding_error

    check_text_start(path, gzipped, limits, filename)
    records: list[dict] = []
    n_rows, n_columns = 0, 0
    with open_bounded(path, gzipped, limits, filename) as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            records.append(_parse_line(raw, number, filename, encoding_error))
            if len(records) >= max(1, min(JSONL_CHUNK_ROWS, chunk_cells // max(n_columns, 1))):
                chunk = _flush(records, limits, filename, n_rows, n_columns)
                n_rows, n_columns = n_rows + len(chunk), max(n_columns, chunk.shape[1])
                yield chunk
        if records:
            yield _flush(records, limits, filename, n_rows, n_columns)
        elif n_rows == 0:
            yield pd.DataFrame()


def _parse_line(raw: bytes, number: int, filename: str, encoding_error) -> dict:
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
    plain = path.with_name(f"{path.name}.{uuid.uuid4().hex}.parquet")
    try:
        decompress_to(path, plain, limits, filename)
        yield from _iter_parquet_file(plain, filename, limits, chunk_cells)
    finally:
        plain.unlink(missing_ok=True)


def _iter_parquet_file(path: Path, filename: str, limits: UploadLimits, chunk_cells: int) -> Iterator[pd.DataFrame]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from service.partitions import decimals_as_float

    try:
        meta = pq.ParquetFile(path)
        schema = meta.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise BadUpload(f"File {filename!r} is not a readable Parquet file (truncated or not "
                        f"Parquet): {exc}", code="invalid_parquet", details={"file": filename}) from None
    names = schema.names
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


def _check_footer(metadata, filename: str, limits: UploadLimits, n_columns: int) -> None:
    limits.check_cells(filename, metadata.num_rows, n_columns)
    expanded = sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
    if expanded > limits.max_decompressed_bytes:
        raise limits.too_much_data(filename)


def _supported(kind) -> bool:
    import pyarrow.types as t

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
