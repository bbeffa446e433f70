"""Parameter checks shared by every detector, estimator and function of :mod:`detectors`.

Each ``check_*`` raises :class:`DetectorInputError` (a ``ValueError``) with one message shape,
``"<name> must be <what is allowed>, got <value>."``, so that an error names the parameter, its
value and what would do. Detectors call them in ``fit`` (and again in ``test``), never in
``__init__`` (parameters are stored as given, scikit-learn style).
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

__all__ = [
    "DetectorInputError", "CORRECTION_NAMES", "check_alpha", "check_correction", "check_int", "check_number",
    "check_fraction", "check_in", "check_bool", "check_random_state", "check_effect_floors", "check_names",
    "check_distinct", "check_probabilities", "check_numbers",
]


class DetectorInputError(ValueError):
    """Raised when data handed to a detector cannot be tested (wrong shape, NaN, empty...) or a
    parameter is out of its range."""


# The multiple-testing corrections :mod:`detectors.correction` implements (it checks it has each one);
# named here so that validating a parameter does not import the corrections (no import cycle).
CORRECTION_NAMES = ("bh", "bonferroni", "holm")


def _refuse(name: str, allowed: str, value: Any) -> None:
    raise DetectorInputError(f"{name} must be {allowed}, got {value!r}.")


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_int(name: str, value: Any, *, minimum: int = 1, maximum: int | None = None) -> None:
    """An integer (not a bool) in ``[minimum, maximum]``."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)) and int(value) >= minimum
    if not (ok and (maximum is None or int(value) <= maximum)):
        _refuse(name, f"an integer >= {minimum}" if maximum is None else f"an integer in [{minimum}, {maximum}]",
                value)


def check_number(name: str, value: Any, *, minimum: float | None = None, maximum: float | None = None,
                 open_low: bool = False, open_high: bool = False) -> None:
    """A finite real number (not a bool) within the bounds (closed unless ``open_low``/``open_high``)."""
    ok = _is_real(value) and math.isfinite(value)
    if ok and minimum is not None:
        ok = value > minimum if open_low else value >= minimum
    if ok and maximum is not None:
        ok = value < maximum if open_high else value <= maximum
    if not ok:
        where = ""
        if (minimum, maximum) != (None, None):
            low = "(-inf" if minimum is None else f"{'(' if open_low else '['}{minimum:g}"
            high = "inf)" if maximum is None else f"{maximum:g}{')' if open_high else ']'}"
            where = f" in {low}, {high}"
        _refuse(name, f"a finite number{where}", value)


def check_numbers(name: str, values: Any, *, minimum: float | None = None, maximum: float | None = None,
                  open_low: bool = False, open_high: bool = False) -> None:
    """A non-empty sequence of finite real numbers, each within the bounds of :func:`check_number`."""
    if not (_is_sequence(values) and len(values) > 0):
        _refuse(name, "a non-empty sequence of numbers", values)
    for i, value in enumerate(values):
        check_number(f"{name}[{i}]", value, minimum=minimum, maximum=maximum, open_low=open_low, open_high=open_high)


def check_fraction(name: str, value: Any, *, closed: bool = False) -> None:
    """``0 < value < 1`` (``closed``: ``0 <= value <= 1``)."""
    check_number(name, value, minimum=0, maximum=1, open_low=not closed, open_high=not closed)


def check_alpha(alpha: Any) -> None:
    """A decision level: ``0 < alpha < 1``."""
    check_fraction("alpha", alpha)


def check_in(name: str, value: Any, allowed: Iterable[Any]) -> None:
    """One of ``allowed`` (``True`` is not an allowed ``1``)."""
    allowed = list(allowed)
    try:
        ok = any(isinstance(value, bool) == isinstance(a, bool) and bool(value == a) for a in allowed)
    except (TypeError, ValueError):  # e.g. an array compared elementwise
        ok = False
    if not ok:
        _refuse(name, f"one of {allowed}", value)


def check_correction(correction: Any) -> None:
    """A multiple-testing correction of :data:`CORRECTION_NAMES`."""
    check_in("correction", correction, sorted(CORRECTION_NAMES))


def check_bool(name: str, value: Any) -> None:
    """``True`` or ``False`` (NumPy's too)."""
    if not isinstance(value, (bool, np.bool_)):
        _refuse(name, "True or False", value)


def check_random_state(random_state: Any) -> None:
    """A seed: an integer ``>= 0``."""
    check_int("random_state", random_state, minimum=0)


def _is_sequence(value: Any) -> bool:
    return not isinstance(value, (str, bytes)) and hasattr(value, "__len__") and hasattr(value, "__iter__")


def check_names(name: str, value: Any, allowed: Iterable[str], *, optional: bool = True) -> None:
    """A list of names, each one of ``allowed`` (``optional``: or None)."""
    allowed = list(allowed)
    if optional and value is None:
        return
    if not (_is_sequence(value) and all(isinstance(v, str) and v in allowed for v in value)):
        _refuse(name, f"{'None or ' if optional else ''}a list of names from {allowed}", value)


def check_distinct(name: str, value: Any, *, min_length: int = 2, optional: bool = True) -> None:
    """A sequence of at least ``min_length`` distinct items (compared as text) (``optional``: or None)."""
    if optional and value is None:
        return
    if not (_is_sequence(value) and len(value) >= min_length and len(set(map(str, value))) == len(value)):
        _refuse(name, f"{'None or ' if optional else ''}a sequence of at least {min_length} distinct names", value)


def check_probabilities(name: str, values: Any, *, allow_nan: bool = True) -> None:
    """Every value in ``[0, 1]`` (``allow_nan``: NaN stands for "not tested" and passes)."""
    v = np.asarray(values, dtype=float)
    known = ~np.isnan(v) if allow_nan else np.ones(v.shape, bool)
    if np.any(~((v[known] >= 0) & (v[known] <= 1))):
        raise DetectorInputError(f"{name} must lie in [0, 1]{'' if allow_nan else ' (no NaN)'}.")


def check_effect_floors(name: str, value: Any, known: Iterable[str]) -> None:
    """None or a mapping of known effect names to finite non-negative floors."""
    if value is None:
        return
    known = list(known)
    if not isinstance(value, Mapping):
        _refuse(name, "None or a mapping effect name -> floor", value)
    unknown = sorted(set(value) - set(known), key=str)
    if unknown:
        raise DetectorInputError(f"{name} has unknown effect names {unknown}; known: {sorted(known)}.")
    for key, floor in value.items():
        check_number(f"{name}[{key!r}]", floor, minimum=0)
