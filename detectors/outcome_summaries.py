"""Exact, mergeable outcome counts with Poisson-bootstrap replicates.

:class:`ConfusionSummary` holds ``(label, prediction)`` counts, :class:`PredictionSummary` the
predicted-class counts of unlabelled rows; each may carry ``B`` Poisson-bootstrap replicates of
its counts. Both merge like every summary of :mod:`detectors.summaries` (associative,
commutative, ``empty()`` the identity): counts and replicates add over the sorted union of the
class sets (:func:`detectors.confusion.sorted_classes`).

Poisson bootstrap (Hanley & MacGibbon 2006; Chamandy, Muralidharan, Najmi & Naidu 2012): each
row gets ``B`` independent Poisson(1) weights instead of a multinomial resample, which needs one
pass and no knowledge of ``n``, so the weighted counts of partitions simply add. Within a cell of
``c`` rows the weights sum to Poisson(c), so a partition draws that directly (``O(B k^2)`` work,
not ``O(B n)``). Partitions must use independent random streams: pass
``random_state=(seed, partition_index)`` (or a spawned ``numpy.random.SeedSequence``).
:meth:`ConfusionSummary.with_replicates` draws from merged counts instead, which has the same
distribution.

>>> a = ConfusionSummary.from_labels(["cat", "dog"], ["cat", "cat"], n_bootstrap=200, random_state=(0, 0))
>>> b = ConfusionSummary.from_labels(["dog", "owl"], ["dog", "owl"], n_bootstrap=200, random_state=(0, 1))
>>> merged = a.merge(b)
>>> merged.classes, merged.counts.tolist(), merged.replicates.shape
(('cat', 'dog', 'owl'), [[1, 0, 0], [1, 1, 0], [0, 0, 1]], (200, 3, 3))
>>> merged == b.merge(a) == merged.merge(ConfusionSummary.empty())
True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence, cast

import numpy as np

from detectors.base import DetectorInputError, check_int, freeze
from detectors.confusion import as_label_array, confusion_counts, encode, sorted_classes

__all__ = ["ConfusionSummary", "PredictionSummary", "summary_rng"]


def summary_rng(random_state) -> np.random.Generator:
    """A generator from ``random_state``: an int, a ``SeedSequence``, a ``Generator`` or a pair
    ``(random_state, partition_index)`` (an independent stream per partition)."""
    if isinstance(random_state, tuple):
        seed, index = random_state
        return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(index),)))
    return np.random.default_rng(random_state)


def _reindex(values: np.ndarray, old: tuple, new: tuple, axes: int) -> np.ndarray:
    """``values`` with its last ``axes`` class axes moved from ``old`` to ``new`` classes (zeros added)."""
    if old == new:
        return values
    position = {c: i for i, c in enumerate(new)}
    index = np.array([position[c] for c in old], dtype=np.intp)
    out = np.zeros(values.shape[: values.ndim - axes] + (len(new),) * axes, dtype=values.dtype)
    grid: tuple[np.ndarray, ...] = np.ix_(*([index] * axes))
    out[(Ellipsis, *grid)] = values  # type: ignore[index]  # numpy's stubs do not type a starred index
    return out


@dataclass(frozen=True, eq=False)
class _ClassCounts:
    """Counts over classes (``_AXES`` class axes) plus optional Poisson-bootstrap replicates."""

    classes: tuple = ()
    counts: np.ndarray = field(default=None)  # type: ignore[arg-type]  # required; every constructor sets it
    replicates: np.ndarray | None = None
    _AXES = 1

    def __post_init__(self):
        classes = tuple(self.classes)
        shape = (len(classes),) * self._AXES
        counts = np.zeros(shape, np.int64) if self.counts is None else np.asarray(self.counts, dtype=np.int64)
        if counts.shape != shape:
            raise DetectorInputError(f"counts must have shape {shape} for {len(classes)} classes, got {counts.shape}.")
        reps = None if self.replicates is None else np.asarray(self.replicates, dtype=np.int64)
        if reps is not None and (reps.ndim != self._AXES + 1 or reps.shape[1:] != shape):
            raise DetectorInputError(f"replicates must have shape (B, {', '.join(map(str, shape))}), got {reps.shape}.")
        object.__setattr__(self, "classes", classes)
        object.__setattr__(self, "counts", freeze(counts))
        object.__setattr__(self, "replicates", None if reps is None else freeze(reps))

    @classmethod
    def empty(cls):
        return cls()

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def n_bootstrap(self) -> int:
        return 0 if self.replicates is None else int(self.replicates.shape[0])

    def _is_identity(self) -> bool:
        return not self.classes and self.replicates is None

    def merge(self, other):
        """Counts (and replicates) added over the sorted union of both class sets."""
        if other._is_identity():
            return self
        if self._is_identity():
            return other
        if self.n_bootstrap != other.n_bootstrap:
            raise DetectorInputError(f"Cannot merge summaries with {self.n_bootstrap} and {other.n_bootstrap} "
                                     "bootstrap replicates.")
        classes = tuple(sorted_classes(np.array(self.classes + other.classes, dtype=object)).tolist())
        counts = _reindex(self.counts, self.classes, classes, self._AXES) + _reindex(other.counts, other.classes,
                                                                                     classes, self._AXES)
        reps = None
        if self.replicates is not None:
            reps = (_reindex(self.replicates, self.classes, classes, self._AXES)
                    + _reindex(other.replicates, other.classes, classes, self._AXES))
        return type(self)(classes, counts, reps)

    def reindexed(self, classes: Sequence, *, what: str = "summary"):
        """The same counts over ``classes`` (in that order, zeros for new ones); dropping a class
        with rows is an error naming it."""
        classes = tuple(classes)
        lost = [c for c, n in zip(self.classes, self._class_totals()) if n and c not in classes]
        if lost:
            raise DetectorInputError(f"{what} has classes unseen in the benchmark: {lost[:10]}.")
        kept = np.array([i for i, c in enumerate(self.classes) if c in classes], dtype=np.intp)

        def sub(a):
            return a[(Ellipsis, *np.ix_(*([kept] * self._AXES)))]

        old = tuple(self.classes[i] for i in kept)
        reps = None if self.replicates is None else _reindex(sub(self.replicates), old, classes, self._AXES)
        return type(self)(classes, _reindex(sub(self.counts), old, classes, self._AXES), reps)

    def _class_totals(self) -> np.ndarray:
        """Rows per class on any class axis, shape (k,)."""
        counts = np.asarray(self.counts)
        return counts if self._AXES == 1 else counts.sum(0) + counts.sum(1)

    def with_replicates(self, n_bootstrap: int, random_state=0):
        """A copy with ``n_bootstrap`` Poisson replicates drawn from the (merged) counts."""
        return type(self)(self.classes, self.counts, _poisson(self.counts, n_bootstrap, random_state))

    def __reduce__(self):  # through __init__, so that unpickled arrays are read-only again
        return type(self), (self.classes, np.asarray(self.counts), self.replicates)

    def __eq__(self, other) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        same_reps = (self.replicates is None) == (other.replicates is None) and (
            self.replicates is None or np.array_equal(self.replicates, cast(np.ndarray, other.replicates)))
        return self.classes == other.classes and np.array_equal(self.counts, other.counts) and same_reps

    __hash__ = None  # type: ignore[assignment]  # equal summaries of arrays: not hashable


def _poisson(counts: np.ndarray, n_bootstrap: int, random_state) -> np.ndarray | None:
    """``(B, *counts.shape)`` draws Poisson(count) per cell: the weighted counts of a per-row
    Poisson(1) bootstrap, since a sum of ``c`` independent Poisson(1) weights is Poisson(c)."""
    check_int("n_bootstrap", n_bootstrap, minimum=0)
    if not n_bootstrap:
        return None
    return summary_rng(random_state).poisson(counts, size=(int(n_bootstrap), *counts.shape)).astype(np.int64)


@dataclass(frozen=True, eq=False)
class ConfusionSummary(_ClassCounts):
    """``counts[t, p]``: rows with true class ``t`` predicted ``p``, shape (k, k), classes sorted
    as :func:`detectors.confusion.sorted_classes`; ``replicates`` of shape (B, k, k) or None."""

    _AXES = 2

    @classmethod
    def from_labels(cls, y_true, y_pred, *, classes: Sequence | None = None, n_bootstrap: int = 0,
                    random_state=0) -> "ConfusionSummary":
        """Summarise aligned label arrays of shape (n,)."""
        t, p = as_label_array(y_true, "y_true"), as_label_array(y_pred, "y_pred")
        if t.size != p.size:
            raise DetectorInputError(f"y_true has {t.size} rows but y_pred has {p.size}.")
        found = sorted_classes(t, p) if classes is None else sorted_classes(np.array(list(classes), dtype=object))
        k = len(found)
        counts = confusion_counts(encode(t, found, "y_true"), encode(p, found, "y_pred"), k) if k else None
        counts = np.zeros((k, k), np.int64) if counts is None else counts
        return cls(tuple(found.tolist()), counts, _poisson(counts, n_bootstrap, random_state))

    def predictions(self) -> "PredictionSummary":
        """The predicted-class counts (column sums), replicates included."""
        reps = None if self.replicates is None else self.replicates.sum(axis=1)
        return PredictionSummary(self.classes, self.counts.sum(axis=0), reps)


@dataclass(frozen=True, eq=False)
class PredictionSummary(_ClassCounts):
    """Predicted-class counts of unlabelled rows; ``replicates`` of shape ``(B, k)``."""

    @classmethod
    def from_predictions(cls, y_pred, *, classes: Sequence | None = None, n_bootstrap: int = 0,
                         random_state=0) -> "PredictionSummary":
        p = as_label_array(y_pred, "y_pred")
        found = sorted_classes(p) if classes is None else sorted_classes(np.array(list(classes), dtype=object))
        counts = np.bincount(encode(p, found, "y_pred"), minlength=len(found)).astype(np.int64)
        return cls(tuple(found.tolist()), counts, _poisson(counts, n_bootstrap, random_state))
