"""A registered dataset whose ``image`` column holds paths: its derived context, computed on the
Dask workers before the audit scans it.

Each row group of each Parquet file is one task. The worker reads its rows, :data:`CHUNK_ROWS`
at a time reads every row's image itself (a path inside ``CONTEXTSHIFT_DATA_ROOTS``: the rule, limits
and loaders of an upload, :func:`service.datasets.images.sources.path_loaders`) and derives the columns with
:func:`service.datasets.images.derive.derive_frame`, the upload's own code, so the values are the ones an
upload of the same images stores; the image cache by content hash is shared, so an image already
derived (by an upload, an earlier audit or another row) is read and hashed but not decoded again.
Each derived chunk is written as one Parquet partition to a scratch folder the audit then scans
and removes. Workers must therefore see the data roots, the data dir's image cache and the scratch
folder at the same paths as the service (one machine, or a shared file system), as they already
see the registered files.

A row whose image cannot be read is an error naming the row (its position in the dataset, from 1);
the audit fails with ``bad_images`` unless the dataset was registered with
``"on_image_error": "skip"``, which audits the other rows.
"""
from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from service.datasets.images.cache import ImageCache
from service.datasets.images.derive import (
    cache_dir,
    check_count,
    check_errors,
    derive_frame,
    derived_roles,
    skipped_rows,
)
from service.datasets.images.origins import column_sources, derived_ref
from service.datasets.images.sources import IMAGE_COLUMN, ImageLimits, path_loaders

__all__ = ["CHUNK_ROWS", "ImageTask", "DerivedImages", "AuditSide", "derive_row_group", "derive_on_cluster",
           "has_images", "image_side"]

# rows derived at a time: a worker holds this many rows' values (each with its thumbnail) at once
CHUNK_ROWS = 2000


@dataclass(frozen=True)
class ImageTask:
    """What every task needs besides its rows; sent to the workers (picklable)."""

    roots: tuple[str, ...]
    limits: ImageLimits
    cache_dir: str
    pack: Any  # the audit's domain pack: its derived-context mapping


@dataclass(frozen=True)
class PartImages:
    """One task's result: the derived partitions written (none for a chunk whose every row failed)."""

    paths: tuple[str, ...]
    n_rows: int
    errors: Mapping[int, str]  # row position in the dataset -> why its image failed
    added: tuple[str, ...]
    digest: str  # sha256 of the partitions' bytes


@dataclass(frozen=True)
class DerivedImages:
    """A registered dataset with its images derived: the partitions to audit instead of its files."""

    files: tuple[str, ...]
    n_images: int
    added: tuple[str, ...]  # pack context columns derived from image values
    errors: Mapping[int, str]
    fingerprint: str  # sha256 of every derived partition's bytes: a benchmark scan is cached under it


def has_images(row: Any) -> bool:
    """A registered dataset whose files have an ``image`` column (of paths)."""
    return getattr(row, "storage", None) == "registered" and any(
        c.get("name") == IMAGE_COLUMN for c in row.columns or ())


def derive_row_group(source: str, row_group: int, target: str, offset: int, task: ImageTask) -> PartImages:
    """On a worker: derive the images of one row group of ``source`` into ``target-<chunk>.parquet``."""
    with pq.ParquetFile(source) as handle:
        rows = handle.read_row_group(row_group)
    paths, errors, kept, digest = [], {}, 0, hashlib.sha256()
    added: tuple[str, ...] = ()
    for start in range(0, rows.num_rows, CHUNK_ROWS):
        frame = rows.slice(start, CHUNK_ROWS).to_pandas()
        loaders = path_loaders(frame[IMAGE_COLUMN], [Path(r) for r in task.roots], task.limits)
        derived = derive_frame(frame, loaders, limits=task.limits, cache=ImageCache(Path(task.cache_dir)),
                               pack=task.pack, workers=1)  # one image at a time: the cluster is the pool
        errors.update({offset + start + i: e for i, e in derived.errors.items()})
        added = derived.added
        if not derived.table.empty:
            paths.append(_write(derived.table, f"{target}-{start // CHUNK_ROWS:05d}.parquet"))
            kept += len(derived.table)
            # the footers alone would not change when an image at the same path was replaced
            digest.update(Path(paths[-1]).read_bytes())
    return PartImages(tuple(paths), kept, errors, added, digest.hexdigest())


def _write(frame, target: str) -> str:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    # a column with no value in this chunk (no JPEG, no face) would be typed null here and text elsewhere
    fields = [f.with_type(pa.string()) if pa.types.is_null(f.type) else f for f in table.schema]
    table = table.cast(pa.schema(fields, metadata=table.schema.metadata))
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, target)
    return target


def _row_groups(files: list[str]) -> list[tuple[str, int, int]]:
    """(file, row group, rows) of every row group, in dataset order."""
    out = []
    for file in files:
        meta = pq.read_metadata(file)
        out += [(file, g, meta.row_group(g).num_rows) for g in range(meta.num_row_groups)]
    return out


def derive_on_cluster(client: Any, files: list[str], *, settings: Any, pack: Any, on_error: str,
                      out_dir: Path, shown: str) -> DerivedImages:
    """Derive every row's image of the dataset ``files`` on the cluster; 422 as an upload would."""
    limits = ImageLimits.from_settings(settings)
    groups = _row_groups(files)
    n_rows = sum(n for *_, n in groups)
    check_count(shown, n_rows, limits)
    sources, group_ids, targets, offsets, start = [], [], [], [], 0
    for i, (file, group, n) in enumerate(groups):
        sources.append(file)
        group_ids.append(group)
        targets.append(str(out_dir / f"part-{i:06d}"))
        offsets.append(start)
        start += n
    task = ImageTask(tuple(str(r) for r in settings.data_roots), limits, str(cache_dir(settings)), pack)
    futures = client.map(derive_row_group, sources, group_ids, targets, offsets, [task] * len(groups), pure=False)
    parts = client.gather(futures)
    errors = {i: e for part in parts for i, e in part.errors.items()}
    check_errors(shown, errors, n_rows=n_rows, on_error=on_error)
    fingerprint = hashlib.sha256("".join(p.digest for p in parts).encode()).hexdigest()
    return DerivedImages(tuple(f for p in parts for f in p.paths), sum(p.n_rows for p in parts),
                         parts[0].added if parts else (), errors, fingerprint)


@dataclass(frozen=True)
class AuditSide:
    """One side of a Dask audit: the files to scan, their roles, the reference the report cites,
    and what was derived from images (``None`` for a dataset without them)."""

    files: tuple[str, ...]
    roles: Mapping[str, str]
    ref: Mapping[str, Any]
    images: Mapping[str, Any] | None = None
    fingerprint: str | None = None  # of the derived partitions (their footers alone do not say it)


def image_side(client: Any, row: Any, files: list[str], roles: dict[str, str], *, settings: Any, pack: Any,
               out_dir: Path) -> AuditSide:
    """One side of a Dask audit, with its images derived on the cluster when the dataset has them."""
    if not has_images(row):
        return AuditSide(tuple(files), roles, {"id": row.id, "name": row.name, **derived_ref(row.validation)})
    recorded = (row.validation or {}).get("images") or {}
    shutil.rmtree(out_dir, ignore_errors=True)
    derived = derive_on_cluster(client, files, settings=settings, pack=pack, out_dir=out_dir, shown=row.name,
                                on_error=recorded.get("on_image_error", "fail"))
    user = {c: r for c, r in roles.items() if c != IMAGE_COLUMN}
    columns = _columns(derived.files)
    roles = {**{c: r for c, r in derived_roles(columns, derived.added).items() if c in columns}, **user}
    sources = column_sources(list(user), derived.added, pack)
    ref = {"id": row.id, "name": row.name, **derived_ref({"images": {"columns": sources}})}
    images = {"n_images": derived.n_images, "derived_context": list(derived.added),
              "skipped_rows": skipped_rows(dict(derived.errors))}
    return AuditSide(derived.files, roles, ref, images, derived.fingerprint)


def _columns(files: tuple[str, ...]) -> list[str]:
    return list(pq.read_schema(files[0]).names) if files else []
