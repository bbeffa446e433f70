"""Shared plumbing for every detector: errors, fitted-state checks, parameter checks, immutable
results and their serialisation.

Conventions every public detector and estimator follows (checked by
``tests/detectors/test_api_contract.py``):

* parameters are keyword-only, stored as given by ``__init__`` and validated in ``fit`` (and
  again in ``test``) with the ``check_*`` functions of :mod:`detectors.validation` (importable
  from here too), whose messages name the parameter, its value and what is allowed
  (:class:`DetectorInputError`, a ``ValueError``);
* the same names everywhere: ``alpha``, ``correction``, ``random_state``, ``n_bootstrap``;
* results derive from :class:`Result` and are immutable all the way down: their nested
  containers are frozen on construction (:func:`freeze`).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, cast

import numpy as np

# the parameter checks live in detectors.validation; every detector imports them from here
from detectors.validation import (
    CORRECTION_NAMES,
    DetectorInputError,
    check_alpha,
    check_bool,
    check_correction,
    check_distinct,
    check_effect_floors,
    check_fraction,
    check_in,
    check_int,
    check_names,
    check_number,
    check_probabilities,
    check_random_state,
)

__all__ = [
    "DetectorInputError",
    "NotFittedError",
    "check_fitted",
    "check_alpha",
    "check_correction",
    "check_int",
    "check_number",
    "check_fraction",
    "check_in",
    "check_bool",
    "check_random_state",
    "check_effect_floors",
    "check_names",
    "check_distinct",
    "check_probabilities",
    "CORRECTION_NAMES",
    "renamed_parameters",
    "FrozenDict",
    "freeze",
    "Result",
    "ShiftTest",
    "to_jsonable",
]


class NotFittedError(RuntimeError):
    """Raised when ``test``/``estimate`` is called before ``fit``."""


def check_fitted(estimator: Any, attribute: str) -> None:
    """Raise :class:`NotFittedError` unless ``estimator`` has learned ``attribute``."""
    if getattr(estimator, attribute, None) is None:
        name = type(estimator).__name__
        raise NotFittedError(f"{name} is not fitted yet: call {name}.fit(...) first.")


def renamed_parameters(**renames: str):
    """Decorator: accept the old keyword ``old=new`` names of a function's (or method's) parameters,
    with a :class:`DeprecationWarning` (e.g. ``n_boot`` -> ``n_bootstrap``, ``benchmark`` -> ``reference``)."""
    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{fn.__qualname__}() got both {old!r} and its new name {new!r}.")
                    warnings.warn(f"{fn.__qualname__}({old}=...) is deprecated; use {new}=...", DeprecationWarning,
                                  stacklevel=2)
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)
        inner.renamed_parameters = dict(renames)  # old -> new, for the API tests
        return inner
    return wrap


class FrozenDict(dict):
    """A read-only ``dict``: results hold these instead of dicts.

    Still a ``dict`` for ``json``, pydantic, ``dict(d)``, ``{**d}`` and pickling; every method
    that would change it raises ``TypeError``. Build a new mapping to change a value
    (``{**test.details, "reason": ...}``).
    """

    __slots__ = ()

    def _read_only(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} is read-only; build a new mapping instead.")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _read_only

    def __reduce__(self):
        return type(self), (dict(self),)

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"


# Plain scalars leave freeze() and to_jsonable() at once: most values of a result are such scalars,
# and the ABC checks below (isinstance(value, Mapping)) cost more than the rest of a result's build
_PLAIN = frozenset({str, int, bool, type(None)})


def freeze(value: Any) -> Any:
    """``value`` with its containers made immutable, recursively: mappings become
    :class:`FrozenDict`, lists and tuples tuples, sets frozensets, numpy arrays read-only
    copies. Results (already frozen) and scalars are returned as they are."""
    if type(value) in _PLAIN or type(value) is float:
        return value
    if isinstance(value, FrozenDict) or isinstance(value, Result):
        return value
    if isinstance(value, Mapping):
        return FrozenDict((k, freeze(v)) for k, v in value.items())
    if type(value) in (list, tuple):
        items = tuple(freeze(v) for v in value)
        return value if type(value) is tuple and all(a is b for a, b in zip(items, value)) else items
    if isinstance(value, (set, frozenset)):
        return frozenset(freeze(v) for v in value)
    if isinstance(value, np.ndarray) and value.flags.writeable:
        value = value.copy()
        value.flags.writeable = False
    return value


def to_jsonable(value: Any) -> Any:
    """Convert results (dataclasses, numpy scalars/arrays, tuples, NaN) to JSON-ready values.

    NaN and infinities become ``None`` because JSON has no representation for them.
    """
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
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
    """Base of frozen result dataclasses: ``to_dict()`` gives the AuditResult JSON (``reports/SCHEMA.md``).

    Immutable all the way down: on construction (and so after ``dataclasses.replace``) every
    field is passed through :func:`freeze`, so a result holds tuples, :class:`FrozenDict`
    mappings and read-only arrays, never a list, dict or writeable array.
    """

    def __post_init__(self) -> None:
        for f in dataclasses.fields(cast(Any, self)):  # every subclass is a dataclass
            value = getattr(self, f.name)
            frozen = freeze(value)
            if frozen is not value:
                object.__setattr__(self, f.name, frozen)

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
