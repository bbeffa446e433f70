"""A streamed upload: the spooled file read chunk by chunk, each chunk typed, validated and
written as Parquet parts. Memory holds one chunk (``CONTEXTSHIFT_UPLOAD_CHUNK_CELLS`` cells)
and the hashes of id values (8 bytes per row, see :mod:`service.chunk_validation`), however
large the file: it never becomes one frame.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from service import image_intake, ingest, roles, validation
from service.bounded import UploadLimits
from service.chunk_validation import ChunkedValidation
from service.errors import ValidationFailed
from service.models import DatasetRow
from service.partitions import PartWriter
from service.store import ARROW_FAULTS, arrow_fault


def store_upload(runtime: Any, spooled: Path, *, filename: str, name: str, role: str, pack: Any,
                 user_schema: Any, sha256: str) -> tuple[DatasetRow, bool]:
    """Read, type, validate and store the upload at ``spooled``; ``(row, created)`` as
    :meth:`service.store.DatasetStore.commit`. Any 4xx leaves nothing stored."""
    settings, store = runtime.settings, runtime.datasets
    images = image_intake.prepare_upload(settings, spooled, filename=filename, pack=pack,
                                         user_schema=user_schema, tmp_dir=store.tmp_dir)
    if images is not None:  # images become derived columns: store that table instead
        spooled, filename, user_schema = images.path, images.filename, images.schema(user_schema)
    chunks = ingest.iter_chunks(spooled, filename, UploadLimits.from_settings(settings),
                                chunk_cells=settings.upload_chunk_cells)
    try:
        with store.staging() as writer:
            first = next(chunks)
            explicit = roles.parse_schema(user_schema, first.columns, filename)
            column_roles = roles.infer_roles(first.columns, schema=explicit,
                                             context_columns=pack.context_names if pack else ())
            with ChunkedValidation(expectations(first, column_roles, pack), spill_dir=store.tmp_dir) as checker:
                _write_all(_chain(first, chunks), checker, writer)
                report = checker.report()
                if images is not None:
                    report["images"] = images.metadata  # what was derived, from what, by which version
            if not report["success"]:
                raise validation_failed(filename, report)
            staged = store.finish(writer)
            final = writer.schema.empty_table().to_pandas()  # dtypes after any widening across chunks
            return store.commit(staged, name=name, role=role, domain=pack.name if pack else None,
                                n_columns=first.shape[1], columns=roles.describe_columns(final, column_roles, explicit),
                                validation=report, sha256=sha256)
    finally:
        chunks.close()
        if images is not None:
            images.path.unlink(missing_ok=True)


def expectations(frame: pd.DataFrame, column_roles: dict[str, str], pack: Any) -> list[validation.Expectation]:
    """What the roles imply, plus the domain pack's expectations on the columns present."""
    found = validation.schema_expectations(frame, column_roles)
    if pack is not None:
        found += validation.pack_expectations(pack.expectations, pack.name, frame.columns)
    return found


def validation_failed(filename: str, report: dict[str, Any]) -> ValidationFailed:
    failures = [r for r in report["results"] if not r["success"]]
    first = failures[0]
    example = f"rows {first['duplicate_rows'][:5]} repeat an id" if "duplicate_rows" in first else \
        f"e.g. {first.get('partial_unexpected_list', [])[:5]}"
    where = f"column {first['column']!r}" if first.get("column") is not None else \
        f"columns {list((first.get('kwargs') or {}).get('column_list') or [])}"
    return ValidationFailed(
        f"File {filename!r} failed {len(failures)} data expectation(s); first: {first['expectation']} "
        f"on {where}, {example}.",
        details={"file": filename, "failures": failures, "rows_checked": report.get("rows_checked")})


def _chain(first: pd.DataFrame, rest: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    yield first
    yield from rest


def _write_all(chunks: Iterator[pd.DataFrame], checker: ChunkedValidation, writer: PartWriter) -> None:
    """Validate then write each chunk; stop at the first chunk that fails for good."""
    import pyarrow as pa

    for chunk in chunks:
        if not checker.add(chunk):
            return
        try:
            writer.write(pa.Table.from_pandas(chunk, preserve_index=False))
        except (pa.ArrowException, *ARROW_FAULTS) as exc:
            raise arrow_fault(exc) from None
