"""Data-quality warnings of an audit's input: numeric values outside a context column's declared
range (``min`` / ``max``) and categorical contexts whose values the benchmark had to supply.

A real production file holds such values (an age of 138 in a children's hospital's tests); the
rows are kept, audited, and named in the audit's notes (their ids, the first :data:`SHOW_ROWS`
and the count). Rows are named by the id column's values when the data has one, else by 0-based
row number. The same tally runs over a whole frame, an upload's chunks or a Dask partition, and
tallies merge.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Mapping

import numpy as np
import pandas as pd

from detectors.base import to_jsonable
from domains import DomainPack

__all__ = ["FrameProblem", "RangeRule", "RangeTally", "range_rules", "frame_warnings", "audit_notes",
           "data_quality_notes", "benchmark_values", "benchmark_value_notes", "id_column", "SHOW_ROWS"]

SHOW_ROWS = 20


@dataclass(frozen=True)
class FrameProblem:
    """One problem of one column: ``severity`` says whether it refuses the data."""

    severity: Literal["refusal", "warning"]
    kind: str  # the expectation's name, or "out_of_declared_range"
    column: str | None
    message: str
    rows: tuple[Any, ...] = ()  # the first SHOW_ROWS offending rows (ids, else row numbers)
    n_rows: int = 0
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity, "kind": self.kind, "column": self.column, "message": self.message,
                "rows": list(self.rows), "n_rows": self.n_rows, **self.details}


@dataclass(frozen=True)
class RangeRule:
    """A context column's declared range: values outside it are a warning."""

    column: str
    low: float | None
    high: float | None


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def range_rules(pack: DomainPack | None, frame: pd.DataFrame) -> list[RangeRule]:
    """The declared ranges of the pack's numeric context columns that ``frame`` has as numbers (a
    text column under a numeric context stays a refusal: its type is wrong, not its values)."""
    if pack is None:
        return []
    return [RangeRule(c.name, c.min, c.max) for c in pack.context
            if c.type == "numeric" and (c.min is not None or c.max is not None)
            and c.name in frame.columns and _is_numeric(frame[c.name])]


class RangeTally:
    """Values outside the declared ranges, counted over the chunks or partitions of one dataset."""

    def __init__(self, rules: Iterable[RangeRule], id_column: str | None) -> None:
        self.rules, self.id_column = list(rules), id_column
        self.counts = {r.column: 0 for r in self.rules}
        self.rows: dict[str, list[Any]] = {r.column: [] for r in self.rules}
        self.values: dict[str, list[float]] = {r.column: [] for r in self.rules}

    def add(self, chunk: pd.DataFrame, first_row: int = 0) -> None:
        for rule in self.rules:
            if rule.column not in chunk.columns:
                continue
            values = pd.to_numeric(chunk[rule.column], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            outside = np.zeros(len(values), bool)
            if rule.low is not None:
                outside |= values < rule.low
            if rule.high is not None:
                outside |= values > rule.high
            hits = np.flatnonzero(outside)
            if not hits.size:
                continue
            self.counts[rule.column] += int(hits.size)
            room = SHOW_ROWS - len(self.rows[rule.column])
            if room > 0:
                take = hits[:room]
                ids = (chunk[self.id_column].iloc[take].tolist() if self.id_column in chunk.columns
                       else (take + first_row).tolist())
                self.rows[rule.column] += [to_jsonable(v.item() if hasattr(v, "item") else v) for v in ids]
                self.values[rule.column] += [float(v) for v in values[take]]

    def merge(self, other: "RangeTally") -> None:
        """Add another tally of the same rules (a later partition); rows keep partition order."""
        for column, n in other.counts.items():
            self.counts[column] += n
            room = SHOW_ROWS - len(self.rows[column])
            self.rows[column] += other.rows[column][:max(room, 0)]
            self.values[column] += other.values[column][:max(room, 0)]

    def problems(self) -> list[FrameProblem]:
        out = []
        for rule in self.rules:
            n = self.counts[rule.column]
            if not n:
                continue
            shown, values = self.rows[rule.column], self.values[rule.column]
            bounds = f"[{_fmt(rule.low, '-inf')}, {_fmt(rule.high, 'inf')}]"
            named = "ids" if self.id_column else "row numbers"
            more = f" and {n - len(shown)} more" if n > len(shown) else ""
            out.append(FrameProblem(
                "warning", "out_of_declared_range", rule.column,
                f"{n} value(s) outside the declared range {bounds} (e.g. {_fmt(values[0], '')}), kept and "
                f"audited; {named}: {', '.join(map(str, shown))}{more}.",
                rows=tuple(shown), n_rows=n,
                details={"declared_min": rule.low, "declared_max": rule.high, "values": values[:SHOW_ROWS],
                         "rows_are": named}))
        return out


def _fmt(value: float | None, unbounded: str) -> str:
    return unbounded if value is None else f"{value:g}"


def id_column(column_roles: Mapping[str, str]) -> str | None:
    return next((c for c, r in column_roles.items() if r == "id"), None)


def audit_notes(warnings_by_dataset: Mapping[str, Iterable[Mapping[str, Any]]]) -> list[dict[str, str]]:
    """Audit notes for the data-quality warnings of each dataset (``{"benchmark": [...], ...}``)."""
    return [{"part": f"data quality: {dataset} {w['column']}", "reason": str(w["message"])}
            for dataset, found in warnings_by_dataset.items() for w in found]


def frame_warnings(frame: pd.DataFrame, pack: DomainPack | None,
                   column_roles: Mapping[str, str]) -> list[dict[str, Any]]:
    """The range warnings alone (no expectation is run): for an audit whose data
    were stored or read before the audit's pack was known."""
    tally = RangeTally(range_rules(pack, frame), id_column(column_roles))
    tally.add(frame)
    return [w.to_dict() for w in tally.problems()]


def data_quality_notes(inp: Any) -> list[dict[str, str]]:
    """The audit's notes on its input data under its pack: the out-of-range warnings the engine
    found on every row (``inp.data_quality``), else those of the audit's two frames, so data
    stored without a pack or under another one is checked against the pack it is audited with;
    then the categorical contexts whose values were taken from the benchmark."""
    found = inp.data_quality
    if found is None:
        found = {"benchmark": frame_warnings(inp.benchmark, inp.pack, inp.benchmark_roles),
                 "production": frame_warnings(inp.production, inp.pack, inp.production_roles)}
    return audit_notes(found) + benchmark_value_notes(inp.pack, inp.benchmark, getattr(inp, "summaries", None))


def benchmark_values(pack: DomainPack | None, benchmark: pd.DataFrame, summaries: Any = None) -> dict[str, int]:
    """Categorical contexts declared without ``values`` -> how many distinct values the benchmark
    holds (every row's count from the Dask engine's scan when there is one, else the frame's)."""
    out = {}
    for c in getattr(pack, "context", ()):
        if c.type != "categorical" or c.values is not None or c.name not in benchmark.columns:
            continue
        scanned = getattr(getattr(summaries, "benchmark", None), "categories", {}).get(c.name)
        out[c.name] = len(scanned.counts) if scanned is not None else int(benchmark[c.name].nunique(dropna=True))
    return out


def benchmark_value_notes(pack: DomainPack | None, benchmark: pd.DataFrame,
                          summaries: Any = None) -> list[dict[str, str]]:
    return [{"part": f"context {column}",
             "reason": f"values of {column} taken from the benchmark: {n}; production values outside them are "
                       "new values, audited as untested contexts (the pack lists no values for it)."}
            for column, n in benchmark_values(pack, benchmark, summaries).items()]
