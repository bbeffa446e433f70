"""The tests on the model's inputs and outputs: one hypothesis test record and the covariate section."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from pydantic import Field

from reports.result.base import Interval, Number, Record

__all__ = ["ShiftTest", "MultivariateTest", "TestGroup", "CovariateSection", "flat_record"]


def flat_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A detector result holding its ``test`` (e.g. ``ClassifierTestResult``) as one flat record: the test's
    fields, overridden by the result's own (``is_shift``, ``auc``...); ``drifted`` follows ``is_shift``."""
    inner = record.get("test")
    if not isinstance(inner, Mapping):
        return dict(record)
    flat = {**inner, **{k: v for k, v in record.items() if k != "test"}}
    if isinstance(flat.get("is_shift"), bool):
        flat["drifted"] = flat["is_shift"]
    return flat


class ShiftTest(Record):
    """One hypothesis test: its statistic, p-values (raw and adjusted audit-wide), effect size and the
    practical floor it was held to; ``drifted`` is the decision (adjusted p < alpha and |effect| ≥ floor)."""

    name: str
    method: str = ""
    statistic: Number = None
    p_value: Number = None
    p_value_adjusted: Number = None
    effect_size: Number = None
    effect_name: Optional[str] = None
    effect_floor: Number = None
    n_reference: Optional[int] = None
    n_current: Optional[int] = None
    drifted: bool = False
    kind: str = "feature"
    status: str = "ok"
    details: dict[str, Any] = Field(default_factory=dict)

    @property
    def ran(self) -> bool:
        """The test ran and has a p-value."""
        return self.status == "ok" and self.p_value is not None

    @property
    def flagged(self) -> bool:
        """The detector's decision (reports never re-decide): a test that did not run flags nothing."""
        return self.status == "ok" and self.drifted


class MultivariateTest(ShiftTest):
    """The domain classifier's test of all inputs together: ``auc`` of telling production from benchmark."""

    is_shift: bool = False
    auc: Number = None
    auc_ci: Interval = None
    classifier: Optional[str] = None

    @classmethod
    def from_detector(cls, record: Mapping[str, Any]) -> "MultivariateTest":
        """From ``ClassifierTestResult.to_dict()``: its test flattened, the AUC as the statistic."""
        flat = flat_record(record)
        if flat.get("auc") is not None:
            details = dict(flat.get("details") or {})
            flat["auc_ci"] = flat.get("auc_ci") or details.get("auc_ci")
            flat["details"] = {**details, "auc_ci": flat["auc_ci"]}
            flat["statistic"] = flat["auc"]
        return cls.model_validate(flat)


class TestGroup(Record):
    """Several tests decided together (the model's outputs; inputs within shared contexts)."""

    __test__ = False  # not a pytest test class
    is_shift: bool = False
    tests: list[ShiftTest] = Field(default_factory=list)
    uncovered_share: Number = None
    n_cells: Optional[int] = None


class CovariateSection(Record):
    """Covariate shift: per-feature and missing-rate tests, the multivariate test and the outputs' tests."""

    is_shift: bool = False
    features: list[ShiftTest] = Field(default_factory=list)
    missing: list[ShiftTest] = Field(default_factory=list)
    excluded: list[Any] = Field(default_factory=list)
    multivariate: Optional[MultivariateTest] = None
    outputs: Optional[TestGroup] = None
    distributions: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Histogram aggregates of drifted features (no raw rows).")

    def tests(self) -> list[ShiftTest]:
        """Every input and output test: per feature, missing rates, the multivariate test, the outputs."""
        return [*self.features, *self.missing, *([self.multivariate] if self.multivariate else []),
                *(self.outputs.tests if self.outputs else [])]
