"""Persistence of datasets: metadata in the database, data as Parquet parts written atomically.

The database row is the commit point. Parts are written to a staging folder first, fsynced,
and the folder is renamed to ``datasets/<id>/``; only then is the row committed. A crash before
the commit leaves at most an unreferenced folder, which :meth:`DatasetStore.remove_orphans`
deletes at start-up. Several instances may share the data dir: each keeps its scratch files
(spooled uploads, spilled ids, staging folders) in ``scratch/instance-<id>/``, locked while it
lives, and every staging folder carries a lock of its own (:mod:`service.scratch`) until its row
is committed, so a restarting instance removes only what no live instance holds. A *registered* dataset is the user's
own Parquet files inside ``CONTEXTSHIFT_DATA_ROOTS``: only its row is stored, and deleting it
removes only the row.
"""
from __future__ import annotations

import builtins
import contextlib
import os
import shutil
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import pandas as pd
import pyarrow as pa
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from service.datasets.images.cache import dataset_image_hashes, forget_images
from service.datasets.models import DatasetRow
from service.datasets.partitions import PartWriter, fingerprint, read_parts, write_frame
from service.datasets.paths import Roots, resolve_inside
from service.errors import Conflict, InsufficientStorage, InvalidRequest, NotFound, ServiceError, storage_full
from service.orm import new_id, storable_key
from service.scratch import FolderLock, age_s, held, remove

DATA_ROOTS = "CONTEXTSHIFT_DATA_ROOTS"
# raises Conflict while its resource (audits, rounds, monitors) still uses the dataset; the resources
# above the datasets give theirs (service.runtime), so this store imports none of them
DatasetUse = Callable[[Session, str], None]


def data_roots(paths) -> Roots:
    return Roots(tuple(Path(p) for p in paths), DATA_ROOTS, "registration_disabled", "Registering datasets")


def arrow_fault(exc: Exception) -> ServiceError:
    """A column Arrow cannot store is the upload's fault (422), not a 500; a full disk is 507."""
    if storage_full(exc):
        return InsufficientStorage.of(exc)
    return InvalidRequest(f"The table cannot be stored: {exc}", code="invalid_column_type",
                          details={"reason": str(exc)[:500]})


ARROW_FAULTS: tuple[type[Exception], ...] = (ValueError, TypeError, OverflowError)  # + pa.ArrowException


@dataclass(frozen=True)
class DatasetLocation:
    """Where a dataset's rows are: its Parquet files, and whether they are the user's (registered)."""

    files: list[Path]
    registered: bool


@dataclass(frozen=True)
class Staged:
    """Parts written under ``tmp/``, not yet a dataset."""

    directory: Path
    n_rows: int
    n_partitions: int


class DatasetStore:
    """Create, register, read and delete datasets.

    Parameters
    ----------
    sessions, data_dir
        Database sessions; data lives under ``data_dir``.
    partition_rows : int
        Most rows in one stored part.
    roots : sequence of Path
        Folders whose Parquet files may be registered.
    orphan_grace_s : float
        Start-up cleanup leaves scratch entries younger than this alone even when nobody holds
        them: a folder exists for a moment before its owner locks it, and files of an older
        version of the service carry no lock at all.
    users : sequence of callables ``(session, dataset_id)``
        Checked before a delete, each raising Conflict while its resource still uses the dataset.
    """

    def __init__(self, sessions: sessionmaker[Session], data_dir: Path, *, partition_rows: int = 1_000_000,
                 roots: tuple[Path, ...] | list[Path] = (), orphan_grace_s: float = 300.0,
                 users: Sequence[DatasetUse] = ()) -> None:
        self.sessions = sessions
        self.users = tuple(users)
        self.data_dir = Path(data_dir)
        self.datasets_dir = self.data_dir / "datasets"
        self.scratch_dir = self.data_dir / "scratch"
        self.legacy_tmp_dir = self.data_dir / "tmp"  # scratch of older versions: no locks, age only
        self.partition_rows = int(partition_rows)
        self.roots = data_roots(roots)
        self.orphan_grace_s = float(orphan_grace_s)
        self.instance_id = uuid.uuid4().hex
        self._instance_lock: FolderLock | None = None
        self._staging_locks: dict[Path, FolderLock] = {}
        self._guard = threading.Lock()

    @property
    def tmp_dir(self) -> Path:
        """This instance's scratch folder (spooled uploads, spilled ids, staging), locked from first
        use until :meth:`close` or the process ends."""
        with self._guard:
            if self._instance_lock is None:
                self._instance_lock = FolderLock(self.scratch_dir / f"instance-{self.instance_id}")
                (self._instance_lock.directory / "files").mkdir(exist_ok=True)
        return self._instance_lock.directory / "files"

    def close(self) -> None:
        """Remove this instance's scratch folder and drop its lock."""
        with self._guard:
            lock, self._instance_lock = self._instance_lock, None
        if lock is not None:
            shutil.rmtree(lock.directory / "files", ignore_errors=True)
            lock.release()
            shutil.rmtree(lock.directory, ignore_errors=True)

    def find_duplicate(self, name: str, sha256: str) -> DatasetRow | None:
        with self.sessions() as s:
            return s.scalars(select(DatasetRow).where(DatasetRow.name == name,
                                                      DatasetRow.sha256 == sha256)).first()

    def create(self, *, name: str, role: str, domain: str | None, frame: pd.DataFrame,
               columns: list[dict[str, str]], validation: dict[str, Any], sha256: str) -> DatasetRow:
        return self.create_or_get(name=name, role=role, domain=domain, frame=frame, columns=columns,
                                  validation=validation, sha256=sha256)[0]

    def create_or_get(self, *, name: str, role: str, domain: str | None, frame: pd.DataFrame,
                      columns: list[dict[str, str]], validation: dict[str, Any],
                      sha256: str) -> tuple[DatasetRow, bool]:
        """Store an in-memory frame as parts; see :meth:`commit` for the return value."""
        with self.staging() as writer:
            try:
                write_frame(frame, writer)
            except (pa.ArrowException, *ARROW_FAULTS) as exc:
                raise arrow_fault(exc) from None
            return self.commit(self.finish(writer), name=name, role=role, domain=domain,
                               n_columns=frame.shape[1], columns=columns, validation=validation, sha256=sha256)

    @contextlib.contextmanager
    def staging(self) -> Iterator[PartWriter]:
        """A writer of parts into a fresh locked folder under ``tmp/``, removed unless committed."""
        directory = self.tmp_dir / f"staging-{uuid.uuid4().hex}"
        lock = FolderLock(directory)  # held until the row is committed, wherever the folder moves
        self._staging_locks[directory] = lock
        writer = PartWriter(directory, self.partition_rows)
        try:
            yield writer
        finally:
            writer.abort()
            shutil.rmtree(directory, ignore_errors=True)
            self._staging_locks.pop(directory, None)
            lock.release()

    @staticmethod
    def finish(writer: PartWriter) -> Staged:
        parts = writer.finish()
        return Staged(directory=writer.directory, n_rows=writer.n_rows, n_partitions=len(parts))

    def commit(self, staged: Staged, *, name: str, role: str, domain: str | None, n_columns: int,
               columns: list[dict[str, str]], validation: dict[str, Any], sha256: str) -> tuple[DatasetRow, bool]:
        """Move staged parts to ``datasets/<id>/`` and commit the row: ``(row, True)``, or
        ``(existing, False)`` when a parallel upload of the same name and content committed first
        (the unique index on (name, sha256) decides)."""
        dataset_id = new_id("ds")
        target = self.datasets_dir / dataset_id
        self.datasets_dir.mkdir(parents=True, exist_ok=True)
        lock = self._staging_locks.get(staged.directory)
        os.replace(staged.directory, target)
        if lock is not None:
            lock.moved_to(target)  # still held: a neighbour's cleanup must not take the folder before the row
        row = DatasetRow(id=dataset_id, name=name, role=role, domain=domain, n_rows=staged.n_rows,
                         n_columns=n_columns, columns=columns, validation=validation, sha256=sha256,
                         path=str(target.relative_to(self.data_dir)), storage="copied",
                         n_partitions=staged.n_partitions)
        try:
            return self._insert(row, lambda: shutil.rmtree(target, ignore_errors=True))
        finally:
            if lock is not None:
                lock.release()  # only now: the row is committed (or the folder is gone)

    def register(self, *, name: str, role: str, domain: str | None, spec: str, n_rows: int, n_columns: int,
                 n_partitions: int, columns: list[dict[str, str]], validation: dict[str, Any],
                 sha256: str) -> tuple[DatasetRow, bool]:
        """A catalogue row for the user's files at ``spec`` (nothing is copied)."""
        row = DatasetRow(id=new_id("ds"), name=name, role=role, domain=domain, n_rows=n_rows, n_columns=n_columns,
                         columns=columns, validation=validation, sha256=sha256, path=spec, storage="registered",
                         n_partitions=n_partitions)
        return self._insert(row, lambda: None)

    def _insert(self, row: DatasetRow, undo) -> tuple[DatasetRow, bool]:
        try:
            with self.sessions.begin() as s:
                s.add(row)
        except IntegrityError:
            undo()
            existing = self.find_duplicate(row.name, row.sha256)
            if existing is None:
                raise
            return existing, False
        except BaseException:
            undo()
            raise
        return row, True

    def get(self, dataset_id: str) -> DatasetRow:
        with self.sessions() as s:
            row = s.get(DatasetRow, dataset_id) if storable_key(dataset_id) else None
        if row is None:
            raise NotFound(f"No dataset with id {dataset_id!r}.", details={"dataset": dataset_id})
        return row

    def set_columns(self, dataset_id: str, columns: list[dict[str, Any]], validation: dict[str, Any]) -> DatasetRow:
        """Store new column records (roles changed by the user); the data itself is unchanged."""
        with self.sessions.begin() as s:
            row = s.get(DatasetRow, dataset_id) if storable_key(dataset_id) else None
            if row is None:
                raise NotFound(f"No dataset with id {dataset_id!r}.", details={"dataset": dataset_id})
            row.columns, row.validation = columns, validation
        return row

    def list(self, *, limit: int = 100, offset: int = 0) -> list[DatasetRow]:
        with self.sessions() as s:
            query = select(DatasetRow).order_by(DatasetRow.created_at.desc()).limit(limit).offset(offset)
            return list(s.scalars(query))

    def location(self, dataset_id: str) -> DatasetLocation:
        """The Parquet files of a dataset, for the pandas engine here and the Dask engine.

        A registered dataset is resolved again under today's roots, and its fingerprint must
        still be the one recorded (its ``sha256``): an audit must not read other data than the
        dataset that was validated. Otherwise 409 ``dataset_changed``.
        """
        row = self.get(dataset_id)
        if row.storage != "registered":
            path = self.data_dir / row.path
            files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]  # a file: stored before parts
            return DatasetLocation(files=files, registered=False)
        resolved = resolve_inside(row.path, self.roots)
        try:
            current = fingerprint(resolved.files, resolved.base)
        except (OSError, ValueError):
            current = None
        if current != row.sha256:
            raise Conflict(f"The files of registered dataset {dataset_id!r} changed since it was registered "
                           f"({row.path}); register them again.", code="dataset_changed",
                           details={"dataset": dataset_id, "path": row.path})
        return DatasetLocation(files=resolved.files, registered=True)

    def dataset_files(self, dataset_id: str) -> builtins.list[Path]:
        return self.location(dataset_id).files

    def load_frame(self, dataset_id: str, columns: builtins.list[str] | None = None) -> pd.DataFrame:
        """Every part in one frame (the pandas engine)."""
        return read_parts(self.location(dataset_id).files, columns=columns)

    def delete(self, dataset_id: str) -> None:
        with self.sessions.begin() as s:
            row = s.get(DatasetRow, dataset_id) if storable_key(dataset_id) else None
            if row is None:
                raise NotFound(f"No dataset with id {dataset_id!r}.", details={"dataset": dataset_id})
            for check in self.users:  # 409 while an audit, a round or a monitor still uses it
                check(s, dataset_id)
            path = None if row.storage == "registered" else self.data_dir / row.path  # never the user's files
            images = dataset_image_hashes(path) if path is not None else set()
            s.delete(row)
        if path is not None and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif path is not None:
            path.unlink(missing_ok=True)
        forget_images(self.data_dir, images)  # its cached thumbnails, unless another dataset holds the image

    def remove_orphans(self) -> int:
        """Delete what interrupted uploads left and no live instance holds; return how many.

        Meant for start-up: this instance's own scratch files count as left over (none of its
        uploads can be running yet), another's only when its lock is free and the entry is older
        than ``orphan_grace_s``. A dataset folder no row refers to goes unless its upload still
        holds it; the rows are read again after the lock checks, since a lock is dropped only
        once its row is committed.
        """
        leftovers = [e for e in self.tmp_dir.iterdir() if not held(e)]
        own = self.tmp_dir.parent
        for folder in (self.scratch_dir, self.legacy_tmp_dir):
            if folder.exists():
                leftovers += [e for e in folder.iterdir()
                              if e != own and not held(e) and age_s(e) > self.orphan_grace_s]
        for leftover in leftovers:
            remove(leftover)
        removed = len(leftovers)
        if self.datasets_dir.exists():
            known = self._stored_paths()
            unknown = [e for e in self.datasets_dir.iterdir()
                       if e.name not in known and (e.is_dir() or e.suffix == ".parquet") and not held(e)]
            known = self._stored_paths() if unknown else known
            for entry in unknown:
                if entry.name not in known:
                    remove(entry)
                    removed += 1
        return removed

    def _stored_paths(self) -> set[str]:
        with self.sessions() as s:
            return {Path(p).name for p in s.scalars(select(DatasetRow.path).where(DatasetRow.storage != "registered"))}
