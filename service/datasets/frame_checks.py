"""One validation of a frame against a domain pack, for every way data comes in (upload, CLI,
Python API, the Dask engine, monitors): what refuses the data and what is only a data-quality
warning.

* **Refusals**: the expectations the column roles imply (ids unique, scores in [0, 1], the model
  always answers), the pack's explicit expectations and its allowed categorical values. The
  data cannot be audited as described.
* **Warnings**: numeric values outside a context column's declared range (``min`` / ``max``).
  A real production file holds such values (an age of 138 in a children's hospital's tests);
  the rows are kept, audited, and named in the audit's notes (their ids, the first
  :data:`SHOW_ROWS` and the count), instead of refusing the whole file in one path and accepting
  it in another.

Rows are named by the id column's values when the data has one, else by 0-based row number.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Mapping

import numpy as np
import pandas as pd

from service.datasets import validation
from service.errors import ValidationFailed

__all__ = ["FrameProblem", "FrameCheck", "RangeRule", "RangeTally", "check_frame", "refusing_expectations",
           "range_rules", "refuse", "audit_notes", "frame_warnings", "data_quality_notes", "with_warnings",
           "SHOW_ROWS"]

SHOW_ROWS = 20
BETWEEN = "expect_column_values_to_be_between"


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
class FrameCheck:
    """Every problem of one frame; ``report`` is the validation report stored with a dataset."""

    refusals: tuple[FrameProblem, ...]
    warnings: tuple[FrameProblem, ...]
    report: dict[str, Any]

    @property
    def ok(self) -> bool:
        return not self.refusals


@dataclass(frozen=True)
class RangeRule:
    """A context column's declared range: values outside it are a warning."""

    column: str
    low: float | None
    high: float | None


def _domain_pack(pack: Any) -> Any:
    """The DomainPack behind a ``service.packs.registry.PackView`` (the upload's handle) or the pack itself."""
    # lazy: the pack registry loads SQLAlchemy and the dataset store (~0.8 s); the audit pipeline imports
    # this module and needs no database
    from service.packs.registry import PackView

    return pack.pack if isinstance(pack, PackView) else pack


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def range_rules(pack: Any, frame: pd.DataFrame) -> list[RangeRule]:
    """The declared ranges of the pack's numeric context columns that ``frame`` has as numbers (a
    text column under a numeric context stays a refusal: its type is wrong, not its values)."""
    pack = _domain_pack(pack)
    if pack is None:
        return []
    return [RangeRule(c.name, c.min, c.max) for c in pack.context
            if c.type == "numeric" and (c.min is not None or c.max is not None)
            and c.name in frame.columns and _is_numeric(frame[c.name])]


def _declared_range(item: Mapping[str, Any], rules: Iterable[RangeRule]) -> bool:
    kwargs = item.get("kwargs") or {}
    return item["type"] == BETWEEN and float(kwargs.get("mostly", 1.0)) >= 1.0 and any(
        item.get("column") == r.column and kwargs.get("min_value") == r.low and kwargs.get("max_value") == r.high
        for r in rules)


def refusing_expectations(frame: pd.DataFrame, column_roles: Mapping[str, str],
                          pack: Any) -> list[validation.Expectation]:
    """What the roles imply plus the pack's expectations on the columns present, without the
    declared context ranges :func:`range_rules` turns into warnings."""
    from service.packs.registry import view  # lazy: SQLAlchemy and the stores (~0.8 s); see _domain_pack

    found = validation.schema_expectations(frame, dict(column_roles))
    if pack is not None:
        name, pack = pack.name, _domain_pack(pack)  # the name the data were sent under (an alias stays one)
        rules = range_rules(pack, frame)
        items = [e for e in view(pack).expectations if not _declared_range(e, rules)]
        found += validation.pack_expectations(items, name, frame.columns)
    return found


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
                self.rows[rule.column] += [validation._plain(v) for v in ids]
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


def check_frame(frame: pd.DataFrame, pack: Any, column_roles: Mapping[str, str]) -> FrameCheck:
    """Validate one whole frame against ``pack`` (None: the roles' expectations only)."""
    report = validation.validate(frame, refusing_expectations(frame, column_roles, pack))
    tally = RangeTally(range_rules(pack, frame), _id_column(column_roles))
    tally.add(frame)
    return _outcome(report, tally.problems())


def _id_column(column_roles: Mapping[str, str]) -> str | None:
    return next((c for c, r in column_roles.items() if r == "id"), None)


def _outcome(report: dict[str, Any], warnings: list[FrameProblem]) -> FrameCheck:
    refusals = tuple(FrameProblem("refusal", r["expectation"], r.get("column"), _refusal_message(r),
                                  details={k: v for k, v in r.items() if k not in ("expectation", "column")})
                     for r in report["results"] if not r["success"])
    return FrameCheck(refusals, tuple(warnings), {**report, "warnings": [w.to_dict() for w in warnings]})


def with_warnings(report: dict[str, Any], warnings: list[FrameProblem]) -> dict[str, Any]:
    """A chunked upload's report (service.datasets.chunk_validation) with the range warnings of its tally."""
    return _outcome(report, warnings).report


def _refusal_message(result: Mapping[str, Any]) -> str:
    where = f"column {result['column']!r}" if result.get("column") is not None else \
        f"columns {list((result.get('kwargs') or {}).get('column_list') or [])}"
    example = f"rows {result['duplicate_rows'][:5]} repeat an id" if "duplicate_rows" in result else \
        f"e.g. {list(result.get('partial_unexpected_list') or [])[:5]}"
    return f"{result['expectation']} on {where}, {example}"


def refuse(name: str, report: dict[str, Any], *, where: str = "") -> ValidationFailed:
    """The 422 of a dataset whose report has refusals (the upload's, the CLI's and the engine's)."""
    failures = [r for r in report["results"] if not r["success"]]
    return ValidationFailed(
        f"File {name!r} failed {len(failures)} data expectation(s){where}; first: {_refusal_message(failures[0])}.",
        details={"file": name, "failures": failures, "rows_checked": report.get("rows_checked")})


def audit_notes(warnings_by_dataset: Mapping[str, Iterable[Mapping[str, Any]]]) -> list[dict[str, str]]:
    """Audit notes for the data-quality warnings of each dataset (``{"benchmark": [...], ...}``)."""
    return [{"part": f"data quality: {dataset} {w['column']}", "reason": str(w["message"])}
            for dataset, found in warnings_by_dataset.items() for w in found]


def frame_warnings(frame: pd.DataFrame, pack: Any, column_roles: Mapping[str, str]) -> list[dict[str, Any]]:
    """The warnings of :func:`check_frame` alone (no expectation is run): for an audit whose data
    were stored or read before the audit's pack was known."""
    tally = RangeTally(range_rules(pack, frame), _id_column(column_roles))
    tally.add(frame)
    return [w.to_dict() for w in tally.problems()]


def data_quality_notes(inp: Any) -> list[dict[str, str]]:
    """The audit's notes on its input data under its pack: the out-of-range warnings the engine
    found on every row (``inp.data_quality``), else those of the audit's two frames, so an upload
    stored without a pack or under another one is checked against the pack it is audited with;
    then the categorical contexts whose values were taken from the benchmark."""
    found = inp.data_quality
    if found is None:
        found = {"benchmark": frame_warnings(inp.benchmark, inp.pack, inp.benchmark_roles),
                 "production": frame_warnings(inp.production, inp.pack, inp.production_roles)}
    return audit_notes(found) + benchmark_value_notes(inp.pack, inp.benchmark, getattr(inp, "summaries", None))


def benchmark_values(pack: Any, benchmark: pd.DataFrame, summaries: Any = None) -> dict[str, int]:
    """Categorical contexts declared without ``values`` -> how many distinct values the benchmark
    holds (every row's count from the Dask engine's scan when there is one, else the frame's)."""
    pack = _domain_pack(pack)
    out = {}
    for c in getattr(pack, "context", ()):
        if c.type != "categorical" or c.values is not None or c.name not in benchmark.columns:
            continue
        scanned = getattr(getattr(summaries, "benchmark", None), "categories", {}).get(c.name)
        out[c.name] = len(scanned.counts) if scanned is not None else int(benchmark[c.name].nunique(dropna=True))
    return out


def benchmark_value_notes(pack: Any, benchmark: pd.DataFrame, summaries: Any = None) -> list[dict[str, str]]:
    return [{"part": f"context {column}",
             "reason": f"values of {column} taken from the benchmark: {n}; production values outside them are "
                       "new values, audited as untested contexts (the pack lists no values for it)."}
            for column, n in benchmark_values(pack, benchmark, summaries).items()]
