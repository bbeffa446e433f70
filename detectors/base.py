"""Shared plumbing for every detector: errors, fitted-state checks, result serialisation."""
from __future__ import annotations

import dataclasses
import math
from enum import Enum
from typing import Any
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "DetectorInputError",
    "NotFittedError",
    "check_fitted",
    "check_alpha",
    "check_correction",
    "Result",
    "ShiftTest",
    "to_jsonable",
]


class DetectorInputError(ValueError):
    """Raised when data handed to a detector cannot be tested (wrong shape, NaN, empty...)."""


class NotFittedError(RuntimeError):
    """Raised when ``test``/``estimate`` is called before ``fit``."""


def check_fitted(estimator: Any, attribute: str) -> None:
    """Raise :class:`NotFittedError` unless ``estimator`` has learned ``attribute``."""
    if getattr(estimator, attribute, None) is None:
        name = type(estimator).__name__
        raise NotFittedError(f"{name} is not fitted yet: call {name}.fit(...) first.")


def check_alpha(alpha: Any) -> None:
    """Raise :class:`DetectorInputError` unless ``0 < alpha < 1``."""
    if not 0 < alpha < 1:
        raise DetectorInputError(f"alpha must be in (0, 1), got {alpha!r}.")


def check_correction(correction: Any) -> None:
    """Raise :class:`DetectorInputError` unless ``correction`` names a known correction."""
    from detectors.correction import CORRECTIONS

    if correction not in CORRECTIONS:
        raise DetectorInputError(f"correction must be one of {sorted(CORRECTIONS)}, got {correction!r}.")


def to_jsonable(value: Any) -> Any:
    """Convert results (dataclasses, numpy scalars/arrays, tuples, NaN) to JSON-ready values.

    NaN and infinities become ``None`` because JSON has no representation for them.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [to_jsonable(v) for v in value.tolist()]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return None if not math.isfinite(f) else f
    return value


class Result:
    """Mixin for frozen result dataclasses: ``to_dict()`` gives the JSON of SPEC §9."""

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(self)


@dataclass(frozen=True)
class ShiftTest(Result):
    """One hypothesis test of "no shift", shared by every detector.

    The same record serves features, missing-value rates, model outputs, context columns
    and slice shares, so that one audit can correct all of them together
    (:func:`detectors.correction.readjust`).
    """

    name: str
    method: str  # e.g. "ks", "cvm", "chi2", "z_proportions"
    statistic: float
    p_value: float
    p_value_adjusted: float
    effect_size: float
    effect_name: str  # e.g. "wasserstein_normed", "cramers_v", "psi", "abs_diff"
    effect_floor: float
    n_reference: int
    n_current: int
    drifted: bool
    kind: str = "feature"  # what was tested: feature, missing_rate, output, context, slice_share...
    status: str = "ok"  # "ok" or "insufficient_data" (then p-values are NaN, drifted False)
    details: dict = field(default_factory=dict)
