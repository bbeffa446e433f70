"""Registering a dataset in place: the user's Parquet files inside ``CONTEXTSHIFT_DATA_ROOTS``,
catalogued, never copied.

Every check is a 422 that names its rule: the path rule of :mod:`service.datasets.paths` (no roots set,
outside them, ``..``, symlinks out, nothing matched); every file a readable Parquet file; one
schema across files (column names and Arrow types); column types an audit can use. The upload's
expectations run on a bounded sample, the first row groups up to ``CONTEXTSHIFT_UPLOAD_CHUNK_CELLS``
cells, so ids are checked unique within the sample only (``validation.rows_checked`` says how
many rows). The row count comes from the footers, and ``sha256`` is the fingerprint of
:func:`service.datasets.partitions.fingerprint` (paths, sizes and footers; no full read).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from audit.role_hints import upload_warnings
from service import roles
from service.datasets import validation
from service.datasets.coerce import coerce_columns
from service.datasets.images.derive import check_count
from service.datasets.images.intake import on_image_error
from service.datasets.images.origins import column_sources
from service.datasets.images.sources import IMAGE_COLUMN, ImageLimits
from service.datasets.ingest_formats import _check_types
from service.datasets.models import DatasetRow
from service.datasets.partitions import decimals_as_float, fingerprint
from service.datasets.paths import resolve_inside
from service.datasets.upload import expectations, validation_failed
from service.errors import BadUpload, InvalidRequest


def register_dataset(runtime: Any, *, name: str, role: str, pack: Any, user_schema: Any,
                     path: str) -> tuple[DatasetRow, bool]:
    """Check and catalogue the files at ``path``; ``(row, created)``, or the dataset already
    registered under this name with the same fingerprint and ``False``."""
    store = runtime.datasets
    resolved = resolve_inside(path, store.roots)
    files = resolved.files
    schema, n_rows = common_schema(files, resolved.base)
    sha256 = fingerprint(files, resolved.base)
    existing = store.find_duplicate(name, sha256)
    if existing is not None:
        return existing, False
    label = Path(path).name or path
    if n_rows == 0:
        raise BadUpload(f"The files at {path!r} hold no rows.", code="no_rows", details={"path": path})
    sample = _sample(files, runtime.settings.upload_chunk_cells, len(schema.names))
    sample = coerce_columns(sample, label)
    images = image_paths(runtime.settings, sample, user_schema, label, n_rows, pack)
    if images is not None:  # the paths are read (and the images derived) at audit time, on the cluster
        user_schema = {k: v for k, v in user_schema.items() if k != "on_image_error"} if user_schema else None
    explicit = roles.parse_schema(user_schema, sample.columns, label)
    column_roles = roles.infer_roles(sample.columns, schema=explicit,
                                     context_columns=pack.context_names if pack else ())
    if images is not None:
        column_roles[IMAGE_COLUMN] = "ignore"  # not compared: the columns derived from it are
    report = validation.validate(sample, expectations(sample, column_roles, pack))
    report["rows_checked"] = len(sample)
    report["role_warnings"] = upload_warnings(sample, column_roles, role)
    if images is not None:
        report["images"] = images
    if not report["success"]:
        raise validation_failed(label, report)
    return store.register(name=name, role=role, domain=pack.name if pack else None, spec=resolved.spec,
                          n_rows=n_rows, n_columns=sample.shape[1], n_partitions=len(files),
                          columns=roles.describe_columns(sample, column_roles, explicit), validation=report,
                          sha256=sha256)


def image_paths(settings: Any, sample: pd.DataFrame, user_schema: Any, label: str, n_rows: int,
                pack: Any) -> dict[str, Any] | None:
    """What a registration of image paths records (``validation.images``), else ``None``: the
    on-image-error rule, the image count (within ``CONTEXTSHIFT_MAX_IMAGES``) and the columns the
    images will give; the images themselves are read when an audit derives them."""
    if IMAGE_COLUMN not in sample.columns:
        return None
    import imagecontext  # lazy: imagecontext (OpenCV) ~0.3 s; the API starts without it, only images need it

    on_error = on_image_error(user_schema)
    limits = ImageLimits.from_settings(settings)
    check_count(label, n_rows, limits)
    cells = sample[IMAGE_COLUMN].dropna().head(1).tolist()
    if cells and not isinstance(cells[0], str):
        raise BadUpload(f"Dataset {label!r}: a registered dataset's {IMAGE_COLUMN!r} column must hold file paths "
                        "inside CONTEXTSHIFT_DATA_ROOTS; upload image bytes instead.", code="image_paths_only",
                        details={"file": label})
    names = [c for c in sample.columns if c != IMAGE_COLUMN]
    added = [c for c, rule in (getattr(pack, "derived", None) or {}).items()
             if c not in names and rule.source in imagecontext.COLUMNS]
    return {"extractor_version": imagecontext.EXTRACTOR_VERSION, "source": label, "n_images": n_rows,
            "on_image_error": on_error, "derived_at": "audit", "derived_context": added,
            "derived_columns": list(imagecontext.COLUMNS), "columns": column_sources(names, added, pack)}


def _metadata(file: Path, base: Path):
    try:
        return pq.read_metadata(file)
    except (pa.ArrowException, OSError) as exc:
        shown = file.relative_to(base).as_posix()
        raise InvalidRequest(f"File {shown!r} is not a readable Parquet file: {exc}", code="not_parquet",
                             details={"file": shown}) from None


def common_schema(files: list[Path], base: Path):
    """The files' common Arrow schema and their total rows; 422 when a file differs."""
    first = None
    n_rows = 0
    for file in files:
        meta = _metadata(file, base)
        schema = meta.schema.to_arrow_schema()
        n_rows += meta.num_rows
        if first is None:
            first = schema
            _check_columns(schema, file.relative_to(base).as_posix())
        elif [(f.name, f.type) for f in schema] != [(f.name, f.type) for f in first]:
            shown = file.relative_to(base).as_posix()
            theirs = {f.name: str(f.type) for f in schema}
            ours = {f.name: str(f.type) for f in first}
            differ = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
            raise InvalidRequest(f"File {shown!r} has another schema than {files[0].relative_to(base).as_posix()!r} "
                                 f"(columns {differ[:20]}); all files of a dataset need one schema.",
                                 code="schema_mismatch", details={"file": shown, "columns": differ[:100]})
    return first, n_rows


def _check_columns(schema, shown: str) -> None:
    names = schema.names
    duplicates = sorted({c for c in names if names.count(c) > 1})
    if duplicates:
        raise BadUpload(f"File {shown!r} has duplicate column names: {duplicates}.", code="duplicate_columns",
                        details={"file": shown, "columns": duplicates})
    _check_types(schema, shown)


def _sample(files: list[Path], cells: int, n_columns: int) -> pd.DataFrame:
    """The first row groups, in file order, until about ``cells`` cells (at least one row group)."""
    want, tables, have = max(1, cells // max(n_columns, 1)), [], 0
    for file in files:
        with pq.ParquetFile(file) as source:
            for index in range(source.num_row_groups):
                table = source.read_row_group(index)
                tables.append(table.slice(0, want - have))
                have += min(table.num_rows, want - have)
                if have >= want:
                    break
        if have >= want:
            break
    frame = decimals_as_float(pa.concat_tables(tables)).to_pandas()
    return frame.reset_index(drop=True)
