"""Persistence of datasets: metadata in the database, data as Parquet written atomically.

The database row is the commit point. Data files are written to ``tmp/`` first, fsynced and
renamed into ``datasets/``; only then is the row committed. A crash before the commit leaves
at most an unreferenced file, which :meth:`DatasetStore.remove_orphans` deletes at start-up.
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from service.errors import Conflict, InvalidRequest, NotFound
from service.models import AuditRow, DatasetRow


def storable_key(key: str) -> bool:
    """False for keys no row can have and PostgreSQL refuses to compare (NUL, over-long)."""
    return "\x00" not in key and len(key) <= 255


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def atomic_write_parquet(frame: pd.DataFrame, target: Path, tmp_dir: Path) -> None:
    tmp_dir.mkdir(parents=True, exist_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_dir / f"{target.name}.{uuid.uuid4().hex}.part"
    try:
        frame.to_parquet(tmp, index=False)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _write_checked(frame: pd.DataFrame, path: Path, tmp_dir: Path) -> None:
    """Write the Parquet file; a column Arrow cannot store is the upload's fault (422), not a 500."""
    import pyarrow as pa

    try:
        atomic_write_parquet(frame, path, tmp_dir)
    except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
        raise InvalidRequest(f"The table cannot be stored: {exc}", code="invalid_column_type",
                             details={"reason": str(exc)[:500]}) from None


class DatasetStore:
    """Create, read and delete datasets."""

    def __init__(self, sessions: sessionmaker[Session], data_dir: Path) -> None:
        self.sessions = sessions
        self.data_dir = Path(data_dir)
        self.datasets_dir = self.data_dir / "datasets"
        self.tmp_dir = self.data_dir / "tmp"

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
        """Store a dataset; ``(row, True)``, or ``(existing, False)`` when a parallel upload of the
        same name and content committed first (the unique index on (name, sha256) decides)."""
        dataset_id = new_id("ds")
        path = self.datasets_dir / f"{dataset_id}.parquet"
        _write_checked(frame, path, self.tmp_dir)
        row = DatasetRow(id=dataset_id, name=name, role=role, domain=domain, n_rows=len(frame),
                         n_columns=frame.shape[1], columns=columns, validation=validation,
                         sha256=sha256, path=str(path.relative_to(self.data_dir)))
        try:
            with self.sessions.begin() as s:
                s.add(row)
        except IntegrityError:
            path.unlink(missing_ok=True)
            existing = self.find_duplicate(name, sha256)
            if existing is None:
                raise
            return existing, False
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return row, True

    def get(self, dataset_id: str) -> DatasetRow:
        with self.sessions() as s:
            row = s.get(DatasetRow, dataset_id) if storable_key(dataset_id) else None
        if row is None:
            raise NotFound(f"No dataset with id {dataset_id!r}.", details={"dataset": dataset_id})
        return row

    def list(self, *, limit: int = 100, offset: int = 0) -> list[DatasetRow]:
        with self.sessions() as s:
            query = select(DatasetRow).order_by(DatasetRow.created_at.desc()).limit(limit).offset(offset)
            return list(s.scalars(query))

    def load_frame(self, dataset_id: str, columns: list[str] | None = None) -> pd.DataFrame:
        row = self.get(dataset_id)
        return pd.read_parquet(self.data_dir / row.path, columns=columns)

    def delete(self, dataset_id: str) -> None:
        with self.sessions.begin() as s:
            row = s.get(DatasetRow, dataset_id) if storable_key(dataset_id) else None
            if row is None:
                raise NotFound(f"No dataset with id {dataset_id!r}.", details={"dataset": dataset_id})
            used = s.scalars(select(AuditRow.id).where(or_(AuditRow.benchmark_id == dataset_id,
                                                           AuditRow.production_id == dataset_id))).first()
            if used:
                raise Conflict(f"Dataset {dataset_id!r} is used by audit {used!r}; delete the audit first.",
                               details={"dataset": dataset_id, "audit": used})
            from service.rounds.models import BenchmarkRoundRow  # rounds keep their datasets (FK RESTRICT)

            round_of = s.scalars(select(BenchmarkRoundRow).where(BenchmarkRoundRow.dataset_id == dataset_id)).first()
            if round_of is not None:
                raise Conflict(f"Dataset {dataset_id!r} is round {round_of.number} of benchmark "
                               f"{round_of.series!r}; a registered round cannot be deleted.",
                               details={"dataset": dataset_id, "benchmark": round_of.series,
                                        "round": round_of.number})
            from service.monitors.models import MonitorRow

            monitor = s.scalars(select(MonitorRow.id).where(MonitorRow.benchmark_id == dataset_id)).first()
            if monitor is not None:
                raise Conflict(f"Dataset {dataset_id!r} is the benchmark of monitor {monitor!r}; delete the monitor "
                               "first.", details={"dataset": dataset_id, "monitor": monitor})
            path = self.data_dir / row.path
            s.delete(row)
        path.unlink(missing_ok=True)

    def remove_orphans(self) -> int:
        """Delete temp files and data files no committed row refers to; return how many."""
        removed = 0
        if self.tmp_dir.exists():
            for leftover in self.tmp_dir.iterdir():
                leftover.unlink(missing_ok=True)
                removed += 1
        if self.datasets_dir.exists():
            with self.sessions() as s:
                known = {Path(p).name for p in s.scalars(select(DatasetRow.path))}
            for file in self.datasets_dir.glob("*.parquet"):
                if file.name not in known:
                    file.unlink(missing_ok=True)
                    removed += 1
        return removed
