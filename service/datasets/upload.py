"""A streamed upload: the spooled file read chunk by chunk, each chunk typed, validated and
written as Parquet parts. Memory holds one chunk (``CONTEXTSHIFT_UPLOAD_CHUNK_CELLS`` cells)
and the hashes of id values (8 bytes per row, see :mod:`service.datasets.chunk_validation`), however
large the file: it never becomes one frame.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pandas as pd
import pyarrow as pa

from audit.data_quality import RangeTally, id_column, range_rules
from audit.role_hints import upload_warnings
from service import roles
from service.datasets import frame_checks, ingest, validation
from service.datasets.bounded import UploadLimits
from service.datasets.chunk_validation import ChunkedValidation
from service.datasets.images import intake as image_intake
from service.datasets.models import DatasetRow
from service.datasets.partitions import PartWriter
from service.datasets.store import ARROW_FAULTS, arrow_fault
from service.errors import ValidationFailed


def store_upload(runtime: Any, spooled: Path, *, filename: str, name: str, role: str, pack: Any,
                 user_schema: Any, sha256: str,
                 dialect: tuple[str | None, str | None] = (None, None)) -> tuple[DatasetRow, bool]:
    """Read, type, validate and store the upload at ``spooled``; ``(row, created)`` as
    :meth:`service.datasets.store.DatasetStore.commit`. Any 4xx leaves nothing stored."""
    settings, store = runtime.settings, runtime.datasets
    images = image_intake.prepare_upload(settings, spooled, filename=filename, pack=pack,
                                         user_schema=user_schema, tmp_dir=store.tmp_dir)
    if images is not None:  # images become derived columns: store that table instead
        spooled, filename, user_schema = images.path, images.filename, images.schema(user_schema)
    chunks = ingest.iter_chunks(spooled, filename, UploadLimits.from_settings(settings),
                                chunk_cells=settings.upload_chunk_cells, dialect=dialect)
    try:
        with store.staging() as writer:
            first = next(chunks)
            explicit = roles.parse_schema(user_schema, first.columns, filename)
            column_roles = roles.infer_roles(first.columns, schema=explicit,
                                             context_columns=pack.context_names if pack else ())
            tally = RangeTally(range_rules(frame_checks.domain_pack(pack), first), id_column(column_roles))
            with ChunkedValidation(expectations(first, column_roles, pack), spill_dir=store.tmp_dir) as checker:
                _write_all(_chain(first, chunks), checker, writer, tally)
                report = frame_checks.with_warnings(checker.report(), tally.problems())
                report["role_warnings"] = upload_warnings(first, column_roles, role)
                if images is not None:
                    report["images"] = images.metadata  # what was derived, from what, by which version
            if not report["success"]:
                raise validation_failed(filename, report)
            staged = store.finish(writer)
            final = writer.schema.empty_table().to_pandas()  # dtypes after any widening across chunks
            return store.commit(staged, name=name, role=role, domain=pack.name if pack else None,
                                n_columns=first.shape[1], columns=roles.describe_columns(final, column_roles, explicit),
                                validation=report, sha256=sha256)
    except BaseException:
        if images is not None:  # refused after deriving: its new cache entries go too
            images.refused(settings.data_dir)
        raise
    finally:
        chunks.close()
        if images is not None:
            images.path.unlink(missing_ok=True)


def expectations(frame: pd.DataFrame, column_roles: dict[str, str], pack: Any) -> list[validation.Expectation]:
    """The expectations that refuse an upload (:func:`service.datasets.frame_checks.refusing_expectations`)."""
    return frame_checks.refusing_expectations(frame, column_roles, pack)


def validation_failed(filename: str, report: dict[str, Any]) -> ValidationFailed:
    return frame_checks.refuse(filename, report)


def _chain(first: pd.DataFrame, rest: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    yield first
    yield from rest


def _write_all(chunks: Iterator[pd.DataFrame], checker: ChunkedValidation, writer: PartWriter,
               tally: RangeTally) -> None:
    """Validate then write each chunk; stop at the first chunk that fails for good."""
    for chunk in chunks:
        first_row = checker.rows_checked
        if not checker.add(chunk):
            return
        tally.add(chunk, first_row)
        try:
            writer.write(pa.Table.from_pandas(chunk, preserve_index=False))
        except (pa.ArrowException, *ARROW_FAULTS) as exc:
            raise arrow_fault(exc) from None
