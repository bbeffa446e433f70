"""Domain packs: expert knowledge for one application domain, as immutable validated data.

A pack declares the task and classes, the context columns (type, allowed values or range),
expert slices (predicate, rationale, literature reference), the metrics (primary first),
the minimum slice size and data expectations. Packs are written in YAML
(``domains/packs/*.yaml`` for the built-ins) and validated by pydantic models that forbid
unknown fields; every slice expression must parse and may only use declared context
columns with compatible types and allowed values. Load packs with
:mod:`domains.loader`.
"""
from __future__ import annotations

from typing import Annotated, Literal as TypingLiteral, Union

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from domains import expressions as ex
from domains.derived import DerivedContext, derive_context
from domains.scenarios import Scenario

__all__ = [
    "KNOWN_METRICS", "ContextColumn", "ExpertSlice", "DomainPack",
    "ColumnExists", "ValuesInSet", "ValuesBetween", "NotNull", "Expectation",
]

# Metric names a pack may ask for (what the detectors know how to compute).
KNOWN_METRICS = (
    "accuracy", "balanced_accuracy", "macro_f1", "per_class_recall", "error_rate", "auc",
    "sensitivity", "specificity", "precision", "false_positive_rate", "recall_per_manipulation",
)
# Metrics usable as a scalar per slice (the primary metric must be one of them).
SCALAR_METRICS = ("accuracy", "balanced_accuracy", "macro_f1", "error_rate", "auc",
                  "sensitivity", "specificity", "precision", "false_positive_rate")
BINARY_ONLY = ("auc", "sensitivity", "specificity", "precision", "false_positive_rate",
               "recall_per_manipulation")

Scalar = Union[bool, int, float, str]
_NAME = r"^[a-z][a-z0-9_]*$"


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ContextColumn(_Frozen):
    """A context column: a semantically meaningful condition of data generation."""

    name: str = Field(min_length=1)
    type: TypingLiteral["numeric", "categorical", "boolean"]
    description: str = Field(min_length=1)
    # allowed values (categorical); left out, the values the benchmark holds (a many-valued
    # context such as 80 clinic names need not be listed) and new production values are untested contexts
    values: tuple[Scalar, ...] | None = None
    min: float | None = None  # allowed range (numeric), inclusive
    max: float | None = None
    integer: bool = False
    required: bool = False  # must be present in uploaded data
    max_null_fraction: float | None = Field(default=None, ge=0, le=1)

    @model_validator(mode="after")
    def _consistent(self) -> "ContextColumn":
        if self.type == "categorical" and self.values is not None and not self.values:
            raise ValueError(f"categorical column {self.name!r}: 'values' is empty (leave it out to take the "
                             "benchmark's values)")
        if self.type != "categorical" and self.values is not None:
            raise ValueError(f"'values' is only for categorical columns ({self.name!r} is {self.type})")
        if self.type != "numeric" and (self.min is not None or self.max is not None):
            raise ValueError(f"'min'/'max' are only for numeric columns ({self.name!r} is {self.type})")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"column {self.name!r}: min {self.min} > max {self.max}")
        if self.values is not None and len(set(self.values)) != len(self.values):
            raise ValueError(f"column {self.name!r}: duplicate allowed values")
        return self


class ExpertSlice(_Frozen):
    """A named subset that experts know to matter, with why and where it is documented."""

    name: str = Field(pattern=_NAME)
    expression: str = Field(min_length=1)
    title: str | None = None
    rationale: str = Field(min_length=10)
    reference: str = Field(min_length=10)

    @field_validator("expression")
    @classmethod
    def _parses(cls, expression: str) -> str:
        try:
            ex.parse(expression)
        except ex.ExpressionError as err:
            raise ValueError(str(err)) from None
        return expression

    @property
    def ast(self) -> ex.Node:
        return ex.parse(self.expression)


class ColumnExists(_Frozen):
    type: TypingLiteral["expect_column_to_exist"]
    column: str


class ValuesInSet(_Frozen):
    type: TypingLiteral["expect_column_values_to_be_in_set"]
    column: str
    value_set: tuple[Scalar, ...] = Field(min_length=1)
    mostly: float = Field(default=1.0, gt=0, le=1)


class ValuesBetween(_Frozen):
    type: TypingLiteral["expect_column_values_to_be_between"]
    column: str
    min_value: float | None = None
    max_value: float | None = None
    mostly: float = Field(default=1.0, gt=0, le=1)


class NotNull(_Frozen):
    type: TypingLiteral["expect_column_values_to_not_be_null"]
    column: str
    mostly: float = Field(default=1.0, gt=0, le=1)


# Named after the Great Expectations expectation each one becomes; value expectations
# apply when the column is present, presence itself is `expect_column_to_exist`.
Expectation = Annotated[Union[ColumnExists, ValuesInSet, ValuesBetween, NotNull], Field(discriminator="type")]


class DomainPack(_Frozen):
    """One domain's expert knowledge. Immutable; build with :func:`load_pack_yaml`."""

    name: str = Field(pattern=_NAME)
    title: str = Field(min_length=1)
    description: str = Field(min_length=1)
    version: str = "1"
    task: TypingLiteral["multiclass", "binary"]
    classes: tuple[str, ...] = ()  # empty: taken from the data (generic pack)
    positive_class: str | None = None
    context: tuple[ContextColumn, ...] = ()
    slices: tuple[ExpertSlice, ...] = ()
    metrics: tuple[str, ...] = Field(min_length=1)  # primary first
    min_slice_size: int = Field(default=30, ge=1)
    expectations: tuple[Expectation, ...] = ()
    derived: dict[str, DerivedContext] = {}  # context column -> derived image value it comes from
    scenarios: tuple[Scenario, ...] = ()  # expert causes of change and the signatures they predict

    @model_validator(mode="after")
    def _consistent(self) -> "DomainPack":
        self._check_task()
        self._check_unique()
        self._check_metrics()
        self._check_slices()
        self._check_derived()
        self._check_scenarios()
        return self

    def _check_task(self) -> None:
        if len(set(self.classes)) != len(self.classes):
            raise ValueError("classes: duplicate class names")
        if self.task == "binary":
            if len(self.classes) != 2:
                raise ValueError(f"classes: a binary task needs exactly 2 classes, got {len(self.classes)}")
            if self.positive_class not in self.classes:
                raise ValueError(f"positive_class: {self.positive_class!r} is not one of {list(self.classes)}")
        elif self.positive_class is not None:
            raise ValueError("positive_class: only binary tasks have a positive class")

    def _check_unique(self) -> None:
        for what, names in (("context", [c.name for c in self.context]), ("slices", [s.name for s in self.slices])):
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise ValueError(f"{what}: duplicate names {dupes}")

    def _check_metrics(self) -> None:
        unknown = [m for m in self.metrics if m not in KNOWN_METRICS]
        if unknown:
            raise ValueError(f"metrics: unknown {unknown}; known metrics are {list(KNOWN_METRICS)}")
        if self.metrics[0] not in SCALAR_METRICS:
            raise ValueError(f"metrics: the primary (first) metric {self.metrics[0]!r} must be one of "
                             f"{list(SCALAR_METRICS)}")
        if self.task == "multiclass":
            binary = [m for m in self.metrics if m in BINARY_ONLY]
            if binary:
                raise ValueError(f"metrics: {binary} need a binary task")

    def _check_slices(self) -> None:
        types = self.context_types
        allowed = {c.name: set(c.values) for c in self.context if c.values is not None}
        ranges = {c.name: (c.min, c.max) for c in self.context if c.type == "numeric"}
        for i, s in enumerate(self.slices):
            where = f"slices[{i}] ({s.name}).expression"
            try:
                ex.validate(s.ast, types, text=s.expression)
            except ex.ExpressionError as err:
                raise ValueError(f"{where}: {err}") from None
            for column, values in ex.literals_by_column(s.ast).items():
                unknown = [v for v in values if column in allowed and v not in allowed[column]]
                if unknown:
                    raise ValueError(f"{where}: {unknown} not among the allowed values of "
                                     f"{column!r} {sorted(map(str, allowed[column]))}")
                outside = [v for v in values if column in ranges and not _within(v, *ranges[column])]
                if outside:
                    raise ValueError(f"{where}: {outside} outside the declared range of {column!r} "
                                     f"[{ranges[column][0]}, {ranges[column][1]}]")

    def _check_derived(self) -> None:
        for column, rule in self.derived.items():
            if column not in self.context_types:
                raise ValueError(f"derived.{column}: not a declared context column")
            declared = self.column(column)
            if declared.values is not None:
                unknown = [v for v in rule.labels() if v not in declared.values]
                if unknown or not rule.labels():
                    raise ValueError(f"derived.{column}: {unknown or 'the raw value'} not among the "
                                     f"allowed values {sorted(map(str, declared.values))}")
            elif declared.type == "numeric":
                outside = [v for v in rule.labels() if not _within(v, declared.min, declared.max)
                           or isinstance(v, str)]
                if outside:
                    raise ValueError(f"derived.{column}: {outside} outside the declared range "
                                     f"[{declared.min}, {declared.max}]")

    def _check_scenarios(self) -> None:
        names = [s.name for s in self.scenarios]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"scenarios: duplicate names {dupes}")
        contexts = {c.name: c for c in self.context}
        slices = {s.name for s in self.slices}
        for i, scenario in enumerate(self.scenarios):
            for j, sig in enumerate(scenario.signals):
                where = f"scenarios[{i}] ({scenario.name}).signals[{j}]"
                if sig.context is not None and sig.context not in contexts:
                    raise ValueError(f"{where}: context {sig.context!r} is not a declared context column")
                column = contexts.get(sig.context or "")
                if sig.value is not None and column is not None and column.values is not None \
                        and sig.value not in column.values:
                    raise ValueError(f"{where}: {sig.value!r} is not among the allowed values of {sig.context!r}")
                if sig.slice is not None and sig.slice not in slices:
                    raise ValueError(f"{where}: slice {sig.slice!r} is not one of the pack's slices")
                if sig.label is not None and self.classes and sig.label not in self.classes:
                    raise ValueError(f"{where}: class {sig.label!r} is not one of {list(self.classes)}")

    # ------------------------------------------------------------ conveniences

    def derive_context(self, frame: pd.DataFrame) -> tuple[pd.DataFrame, tuple[str, ...]]:
        """``frame`` with the pack's derived context columns added where absent (see
        :func:`domains.derived.derive_context`); also returns the names added."""
        ranges = {c.name: (c.min, c.max) for c in self.context if c.type == "numeric"}
        return derive_context(frame, self.derived, ranges)

    @property
    def primary_metric(self) -> str:
        return self.metrics[0]

    @property
    def context_types(self) -> dict[str, str]:
        """Context column name -> numeric | categorical | boolean."""
        return {c.name: c.type for c in self.context}

    def column(self, name: str) -> ContextColumn:
        for c in self.context:
            if c.name == name:
                return c
        raise KeyError(name)

    def slice(self, name: str) -> ExpertSlice:
        for s in self.slices:
            if s.name == name:
                return s
        raise KeyError(name)

    def slice_masks(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        """Boolean mask (shape ``(len(frame),)``) per slice whose columns are all in ``frame``."""
        masks = {}
        for s in self.slices:
            node = s.ast
            if all(c in frame.columns for c in ex.columns_used(node)):
                masks[s.name] = ex.evaluate(node, frame).to_numpy()
        return masks

    def all_expectations(self) -> tuple[Expectation, ...]:
        """Explicit expectations plus those implied by the context columns' declarations."""
        derived: list = []
        for c in self.context:
            if c.required:
                derived.append(ColumnExists(type="expect_column_to_exist", column=c.name))
            if c.type == "categorical" and c.values is not None:
                derived.append(ValuesInSet(type="expect_column_values_to_be_in_set", column=c.name,
                                           value_set=c.values))
            elif c.type == "boolean":
                derived.append(ValuesInSet(type="expect_column_values_to_be_in_set", column=c.name,
                                           value_set=(True, False)))
            elif c.min is not None or c.max is not None:
                derived.append(ValuesBetween(type="expect_column_values_to_be_between", column=c.name,
                                             min_value=c.min, max_value=c.max))
            if c.max_null_fraction is not None:
                derived.append(NotNull(type="expect_column_values_to_not_be_null", column=c.name,
                                       mostly=max(1e-9, 1 - c.max_null_fraction)))
        return tuple(derived) + tuple(self.expectations)

    def to_dict(self) -> dict:
        """JSON-ready dict (for ``GET /v1/domains/{name}``)."""
        return self.model_dump(mode="json")


def _within(value, low: float | None, high: float | None) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True  # type errors are reported by the expression validator
    return (low is None or value >= low) and (high is None or value <= high)
