"""Persistence of benchmark series: register a round, list series and rounds, and materialise
the union of a series' rounds as a stored benchmark dataset that an audit can use."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from domains import builtin_name
from service.errors import Conflict, InvalidRequest, NotFound
from service.rounds.frames import RoundTable, check_domain, require_labelled, roles_of, round_table, validation_column
from service.rounds.models import BenchmarkRoundRow, BenchmarkSeriesRow


@dataclass(frozen=True)
class SeriesInfo:
    name: str
    domain: str
    n_rounds: int
    created_at: Any


class RoundStore:
    """Benchmark series and rounds; datasets, audits and packs come from the runtime's stores."""

    def __init__(self, sessions: sessionmaker[Session], datasets: Any, audits: Any, packs: Any) -> None:
        self.sessions, self.datasets, self.audits, self.packs = sessions, datasets, audits, packs

    # ------------------------------------------------------------------ reading
    def series(self, name: str) -> BenchmarkSeriesRow:
        with self.sessions() as s:
            row = s.get(BenchmarkSeriesRow, name)
        if row is None:
            raise NotFound(f"No benchmark series named {name!r}.", details={"benchmark": name})
        return row

    def list_series(self) -> list[SeriesInfo]:
        with self.sessions() as s:
            per_series = select(BenchmarkRoundRow.series, func.count()).group_by(BenchmarkRoundRow.series)
            counts = dict(s.execute(per_series).all())
            rows = list(s.scalars(select(BenchmarkSeriesRow).order_by(BenchmarkSeriesRow.name)))
        return [SeriesInfo(r.name, r.domain, int(counts.get(r.name, 0)), r.created_at) for r in rows]

    def rounds(self, name: str) -> list[BenchmarkRoundRow]:
        self.series(name)
        with self.sessions() as s:
            return list(s.scalars(select(BenchmarkRoundRow).where(BenchmarkRoundRow.series == name)
                                  .order_by(BenchmarkRoundRow.number)))

    def round(self, name: str, number: int) -> BenchmarkRoundRow:
        found = [r for r in self.rounds(name) if r.number == number]
        if not found:
            raise NotFound(f"Benchmark {name!r} has no round {number}.", details={"benchmark": name, "round": number})
        return found[0]

    def table(self, row: BenchmarkRoundRow) -> RoundTable:
        ds = self.datasets.get(row.dataset_id)
        return round_table(self.datasets.load_frame(ds.id), roles_of(ds.columns), ds.id)

    def plan_result(self, row: BenchmarkRoundRow) -> dict | None:
        """The result of the audit whose plan the round answers (None if gone or not finished)."""
        if not row.plan_audit_id:
            return None
        try:
            audit = self.audits.get(row.plan_audit_id)
        except NotFound:
            return None
        return audit.result if audit.status == "succeeded" else None

    # ------------------------------------------------------------------ writing
    def register(self, name: str, *, dataset_id: str, plan: str | None = None,
                 model: str | None = None) -> BenchmarkRoundRow:
        """Add ``dataset_id`` as the next round of ``name`` (the series is created by its first round)."""
        ds = self.datasets.get(dataset_id)
        if ds.role == "annotations":
            raise InvalidRequest(f"Dataset {dataset_id!r} is an annotations table; a round is a labelled dataset.",
                                 code="invalid_dataset_role", details={"dataset": dataset_id, "role": ds.role})
        require_labelled(roles_of(ds.columns), dataset_id)
        existing = self._series_or_none(name)
        audit = self.audits.get(plan) if plan else None
        domain = existing.domain if existing else (ds.domain or (audit.domain if audit else None) or "generic")
        self._check_sources(domain, ds, audit)
        table = self.table_of(ds)
        if table.items.empty:
            raise InvalidRequest(f"Dataset {dataset_id!r} has no row with both a label and a prediction.",
                                 code="round_not_labelled", details={"dataset": dataset_id})
        check_domain(table, self.packs.get(domain), dataset_id)
        return self._insert(name, domain, dataset_id, plan, model)

    def table_of(self, ds: Any) -> RoundTable:
        return round_table(self.datasets.load_frame(ds.id), roles_of(ds.columns), ds.id)

    def _series_or_none(self, name: str) -> BenchmarkSeriesRow | None:
        with self.sessions() as s:
            return s.get(BenchmarkSeriesRow, name)

    def _check_sources(self, domain: str, ds: Any, audit: Any) -> None:
        if ds.domain and builtin_name(ds.domain) != builtin_name(domain):  # "medical" is "dermatology"
            raise InvalidRequest(f"Dataset {ds.id!r} was uploaded for domain {ds.domain!r} but the series is "
                                 f"{domain!r}.", code="round_contradicts_domain",
                                 details={"dataset": ds.id, "dataset_domain": ds.domain, "domain": domain})
        if audit is None:
            return
        if audit.status != "succeeded":
            raise Conflict(f"Audit {audit.id!r} is {audit.status}; a round can answer its plan once it has succeeded.",
                           code="audit_not_ready", details={"plan": audit.id, "status": audit.status})
        if builtin_name(audit.domain) != builtin_name(domain):
            raise InvalidRequest(f"Audit {audit.id!r} is a {audit.domain!r} audit but the series is {domain!r}.",
                                 code="round_contradicts_domain", details={"plan": audit.id, "domain": domain})

    def _insert(self, name, domain, dataset_id, plan, model) -> BenchmarkRoundRow:
        try:
            with self.sessions.begin() as s:
                if s.get(BenchmarkSeriesRow, name) is None:
                    s.add(BenchmarkSeriesRow(name=name, domain=domain))
                    s.flush()
                used = s.scalars(select(BenchmarkRoundRow.number).where(
                    BenchmarkRoundRow.series == name, BenchmarkRoundRow.dataset_id == dataset_id)).first()
                if used is not None:
                    raise Conflict(f"Dataset {dataset_id!r} is already round {used} of {name!r}.",
                                   details={"benchmark": name, "round": used, "dataset": dataset_id})
                last = s.scalar(select(func.max(BenchmarkRoundRow.number)).where(BenchmarkRoundRow.series == name))
                row = BenchmarkRoundRow(series=name, number=(last or 0) + 1, dataset_id=dataset_id,
                                        plan_audit_id=plan, model=model)
                s.add(row)
        except IntegrityError:  # another request took the same round number at the same moment
            raise Conflict(f"Another round of {name!r} was registered at the same time; try again.",
                           details={"benchmark": name}) from None
        return row

    # ------------------------------------------------------------------ audits against a series
    def materialise_union(self, name: str) -> tuple[Any, list[int]]:
        """A stored benchmark dataset holding the union of the series' rounds (one row per item,
        the columns every round has, minus validation and annotator columns); reused when the
        same rounds were materialised before."""
        rounds = self.rounds(name)
        if not rounds:
            raise InvalidRequest(f"Benchmark {name!r} has no rounds yet.", code="empty_benchmark")
        series = self.series(name)
        frames: list[pd.DataFrame] = []
        roles: dict[str, str] = {}
        for r in rounds:
            ds = self.datasets.get(r.dataset_id)
            frame, ds_roles = self.datasets.load_frame(ds.id), roles_of(ds.columns)
            frames.append(_one_row_per_item(frame, ds_roles).assign(_round=r.number))
            roles = {**ds_roles, **roles}
        union = _stack(frames, roles)
        kept_roles = {c: roles[c] for c in union.columns}
        digest = hashlib.sha256(pd.util.hash_pandas_object(union, index=False).to_numpy().tobytes()).hexdigest()
        label = f"{name}@rounds-{rounds[0].number}-{rounds[-1].number}"
        existing = self.datasets.find_duplicate(label, digest)
        if existing is not None:
            return existing, [r.number for r in rounds]
        columns = [{"name": c, "role": kept_roles[c], "dtype": str(union[c].dtype)} for c in union.columns]
        row = self.datasets.create(name=label, role="benchmark", domain=series.domain, frame=union, columns=columns,
                                   validation={"success": True, "results": [],
                                               "source": f"union of the rounds of benchmark {name!r}"},
                                   sha256=digest)
        return row, [r.number for r in rounds]


def _one_row_per_item(frame: pd.DataFrame, roles: dict[str, str]) -> pd.DataFrame:
    """Items labelled by several annotators appear once, with their majority label."""
    id_col = next((c for c, r in roles.items() if r == "id"), None)
    label = next((c for c, r in roles.items() if r == "label"), None)
    if id_col is None or label is None or not frame[id_col].duplicated().any():
        return frame
    majority = (frame.groupby([id_col, label], sort=False).size().rename("_votes").reset_index()
                .sort_values("_votes", ascending=False, kind="stable").drop_duplicates(id_col))
    first = frame.drop_duplicates(id_col).drop(columns=label)
    return first.merge(majority[[id_col, label]], on=id_col, how="left")[list(frame.columns)]


def _stack(frames: list[pd.DataFrame], roles: dict[str, str]) -> pd.DataFrame:
    drop = {c for c, r in roles.items() if r == "annotator"} | {validation_column(roles)} | {"_round"}
    common = [c for c in frames[0].columns if c not in drop and all(c in f.columns for f in frames)]
    union = pd.concat([f[common + ["_round"]] for f in frames], ignore_index=True)
    id_col = next((c for c in common if roles.get(c) == "id"), None)
    if id_col is not None and union[id_col].duplicated().any():
        # the same id in two rounds names two different items: keep them apart
        union[id_col] = "r" + union["_round"].astype(str) + ":" + union[id_col].astype(str)
    return union.drop(columns="_round")


def check_no_round_uses(s: Session, dataset_id: str) -> None:
    """Conflict while the dataset is a round of a benchmark series: rounds keep their datasets."""
    round_of = s.scalars(select(BenchmarkRoundRow).where(BenchmarkRoundRow.dataset_id == dataset_id)).first()
    if round_of is not None:
        raise Conflict(f"Dataset {dataset_id!r} is round {round_of.number} of benchmark "
                       f"{round_of.series!r}; a registered round cannot be deleted.",
                       details={"dataset": dataset_id, "benchmark": round_of.series,
                                "round": round_of.number})
