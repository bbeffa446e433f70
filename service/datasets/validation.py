"""Upload validation with Great Expectations (imported lazily: ~3 s).

Expectations come from the inferred column roles (ids unique, scores in [0, 1], ...) and,
when a domain is given, from the domain pack. All are run cheaply first (BOOLEAN_ONLY);
details are collected for the failed ones only (SUMMARY costs ~3x).
"""
from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import pandas as pd

from detectors.base import to_jsonable

_LOCK = threading.RLock()  # the GE context is not thread-safe
_CONTEXT: Any = None


@dataclass(frozen=True)
class Expectation:
    """One data expectation, by Great Expectations' snake_case name."""

    type: str
    column: str | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    source: str = "schema"  # "schema" (from roles) or "domain:<pack>"

    @property
    def gx_class_name(self) -> str:
        return "".join(part.capitalize() for part in self.type.split("_"))


def schema_expectations(frame: pd.DataFrame, roles: Mapping[str, str]) -> list[Expectation]:
    """Expectations implied by the column roles alone.

    Ids are unique, or, when a column has the role ``annotator``, (id, annotator) pairs are.
    """
    out: list[Expectation] = []
    # several annotators may label one item: then an id repeats, once per annotator, and the pair is unique
    annotator = next((c for c, r in roles.items() if r == "annotator"), None)
    for column, role in roles.items():
        numeric = pd.api.types.is_numeric_dtype(frame[column]) and not pd.api.types.is_bool_dtype(frame[column])
        if role == "id" and annotator is not None:
            out.append(Expectation("expect_compound_columns_to_be_unique", None,
                                   {"column_list": [column, annotator]}))
            out.append(Expectation("expect_column_values_to_not_be_null", column))
        elif role == "id":
            out.append(Expectation("expect_column_values_to_be_unique", column))
            out.append(Expectation("expect_column_values_to_not_be_null", column))
        elif role == "score" and numeric:
            out.append(Expectation("expect_column_values_to_be_between", column,
                                   {"min_value": 0.0, "max_value": 1.0}))
            out.append(Expectation("expect_column_values_to_not_be_null", column))
        elif role == "prediction":  # the model always answers; a missing output is a pipeline bug
            out.append(Expectation("expect_column_values_to_not_be_null", column))
        elif role == "score":
            out.append(Expectation("expect_column_values_to_be_of_type", column, {"type_": "float"}))
    return out


def pack_expectations(raw: Iterable[Mapping[str, Any]], pack_name: str,
                      columns: Iterable[str]) -> list[Expectation]:
    """Turn a domain pack's declared expectations into :class:`Expectation` objects.

    Expectations on columns the upload does not have are skipped: packs describe what
    *can* be present; a production upload without labels is normal.
    """
    present = set(columns)
    out = []
    for item in raw:
        column = item.get("column")
        if column is not None and column not in present and item["type"] != "expect_column_to_exist":
            continue
        kwargs = {k: v for k, v in item.get("kwargs", {}).items()}
        out.append(Expectation(item["type"], column, kwargs, source=f"domain:{pack_name}"))
    return out


def _context():
    global _CONTEXT
    if _CONTEXT is None:
        os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
        # lazy: Great Expectations costs 3-5 s; the API and a cron run with nothing new start without it
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        ctx = gx.get_context(mode="ephemeral")
        ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
        _CONTEXT = ctx
    return _CONTEXT


class PreparedSuite:
    """A GE suite set up once and run on many frames (the chunks of one upload).

    Setting up the data source, suite and validation definition is half the cost of a run on a
    small frame (the ephemeral context re-saves its config on every add); a streamed upload pays
    it once. Use as a context manager; the caller holds no lock, every GE call takes ``_LOCK``.
    """

    def __init__(self, expectations: list[Expectation]) -> None:
        # lazy: Great Expectations costs 3-5 s; the API and a cron run with nothing new start without it
        import great_expectations as gx
        import great_expectations.expectations as gxe

        self.expectations = expectations
        self.tag = os.urandom(6).hex()
        with _LOCK:
            ctx = _context()
            source = ctx.data_sources.add_pandas(f"src_{self.tag}")
            batch = source.add_dataframe_asset("frame").add_batch_definition_whole_dataframe("all")
            suite = ctx.suites.add(gx.ExpectationSuite(name=f"suite_{self.tag}"))
            for index, exp in enumerate(expectations):
                cls = getattr(gxe, exp.gx_class_name)
                kwargs = dict(exp.kwargs)
                if exp.column is not None:
                    kwargs["column"] = exp.column
                suite.add_expectation(cls(**kwargs, meta={"index": index}))
            self.definition = ctx.validation_definitions.add(
                gx.ValidationDefinition(name=f"vd_{self.tag}", data=batch, suite=suite))

    def run(self, frame: pd.DataFrame, result_format: str) -> list[Any]:
        with _LOCK:
            result = self.definition.run(batch_parameters={"dataframe": frame}, result_format=result_format)
        # GE does not keep the suite's order in its results: put them back in ours
        ordered: list[Any] = [None] * len(self.expectations)
        for res in result.results:
            ordered[int(res.expectation_config.meta["index"])] = res
        # GE merges expectations it considers equal (e.g. an explicit mostly=1.0): share the result
        by_kind = {(r.expectation_config.type, r.expectation_config.kwargs.get("column")): r for r in result.results}
        return [res if res is not None else by_kind[(exp.type, exp.column)]
                for exp, res in zip(self.expectations, ordered)]

    def close(self) -> None:
        with _LOCK:
            ctx = _context()
            ctx.validation_definitions.delete(f"vd_{self.tag}")
            ctx.suites.delete(f"suite_{self.tag}")
            ctx.data_sources.delete(f"src_{self.tag}")

    def __enter__(self) -> "PreparedSuite":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _run(frame: pd.DataFrame, expectations: list[Expectation], result_format: str) -> list[Any]:
    with PreparedSuite(expectations) as suite:
        return suite.run(frame, result_format)


def validate(frame: pd.DataFrame, expectations: list[Expectation]) -> dict[str, Any]:
    """Run the expectations; return ``{"success", "results": [...]}``."""
    if not expectations:
        return {"success": True, "results": []}
    expectations = _unique(expectations)
    quick = _run(frame, expectations, "BOOLEAN_ONLY")
    failed = [i for i, res in enumerate(quick) if not res.success]
    summaries = _run(frame, [expectations[i] for i in failed], "SUMMARY") if failed else []
    detailed = dict(zip(failed, summaries))
    results = []
    for i, (exp, res) in enumerate(zip(expectations, quick)):
        entry: dict[str, Any] = {"expectation": exp.type, "column": exp.column, "kwargs": exp.kwargs,
                                 "source": exp.source, "success": bool(res.success)}
        if i in detailed:
            entry.update(_failure_details(detailed[i]))
        results.append(entry)
    return {"success": all(r["success"] for r in results), "results": results}


def _unique(expectations: list[Expectation]) -> list[Expectation]:
    """Drop repeats (a pack may restate what the roles imply); GE would merge them anyway."""
    seen, out = set(), []
    for exp in expectations:
        kwargs = {k: v for k, v in exp.kwargs.items() if not (k == "mostly" and v == 1.0)}  # GE's default
        key = json.dumps([exp.type, exp.column, kwargs], sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append(exp)
    return out


def _failure_details(res: Any) -> dict[str, Any]:
    info = res.result or {}
    details = {key: _plain(info[key]) for key in ("unexpected_count", "unexpected_percent",
                                                  "partial_unexpected_list", "observed_value")
               if key in info}
    if "partial_unexpected_list" in details:
        details["partial_unexpected_list"] = details["partial_unexpected_list"][:10]
    if res.exception_info and res.exception_info.get("raised_exception"):
        details["exception"] = str(res.exception_info.get("exception_message"))[:500]
    return details


def _plain(value: Any) -> Any:
    return to_jsonable(value.item() if hasattr(value, "item") and not isinstance(value, list) else value)
