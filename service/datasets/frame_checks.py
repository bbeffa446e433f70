"""One validation of a frame against a domain pack, for every way data comes in (upload, CLI,
Python API, the Dask engine, monitors): what refuses the data and what is only a data-quality
warning.

* **Refusals**: the expectations the column roles imply (ids unique, scores in [0, 1], the model
  always answers), the pack's explicit expectations and its allowed categorical values. The
  data cannot be audited as described.
* **Warnings**: numeric values outside a context column's declared range (``min`` / ``max``),
  tallied by :mod:`audit.data_quality`: the rows are kept, audited, and named in the audit's
  notes, instead of refusing the whole file in one path and accepting it in another.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import pandas as pd

from audit.data_quality import FrameProblem, RangeRule, RangeTally, id_column, range_rules
from service.datasets import validation
from service.errors import ValidationFailed

__all__ = ["FrameCheck", "check_frame", "refusing_expectations", "domain_pack", "refuse", "with_warnings"]

BETWEEN = "expect_column_values_to_be_between"


@dataclass(frozen=True)
class FrameCheck:
    """Every problem of one frame; ``report`` is the validation report stored with a dataset."""

    refusals: tuple[FrameProblem, ...]
    warnings: tuple[FrameProblem, ...]
    report: dict[str, Any]

    @property
    def ok(self) -> bool:
        return not self.refusals


def domain_pack(pack: Any) -> Any:
    """The DomainPack behind a ``service.packs.store.PackView`` (the upload's handle) or the pack itself."""
    # lazy: the pack registry loads SQLAlchemy and the dataset store (~0.8 s); a CLI audit checks its
    # files here and needs no database
    from service.packs.store import PackView

    return pack.pack if isinstance(pack, PackView) else pack


def _declared_range(item: Mapping[str, Any], rules: Iterable[RangeRule]) -> bool:
    kwargs = item.get("kwargs") or {}
    return item["type"] == BETWEEN and float(kwargs.get("mostly", 1.0)) >= 1.0 and any(
        item.get("column") == r.column and kwargs.get("min_value") == r.low and kwargs.get("max_value") == r.high
        for r in rules)


def refusing_expectations(frame: pd.DataFrame, column_roles: Mapping[str, str],
                          pack: Any) -> list[validation.Expectation]:
    """What the roles imply plus the pack's expectations on the columns present, without the
    declared context ranges :func:`range_rules` turns into warnings."""
    from service.packs.store import view  # lazy: SQLAlchemy and the stores (~0.8 s); see domain_pack

    found = validation.schema_expectations(frame, dict(column_roles))
    if pack is not None:
        name, pack = pack.name, domain_pack(pack)  # the name the data were sent under (an alias stays one)
        rules = range_rules(pack, frame)
        items = [e for e in view(pack).expectations if not _declared_range(e, rules)]
        found += validation.pack_expectations(items, name, frame.columns)
    return found


def check_frame(frame: pd.DataFrame, pack: Any, column_roles: Mapping[str, str]) -> FrameCheck:
    """Validate one whole frame against ``pack`` (None: the roles' expectations only)."""
    report = validation.validate(frame, refusing_expectations(frame, column_roles, pack))
    tally = RangeTally(range_rules(domain_pack(pack), frame), id_column(column_roles))
    tally.add(frame)
    return _outcome(report, tally.problems())


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


