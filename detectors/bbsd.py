"""Black-box shift detection (BBSD, Lipton et al. 2018; Rabanser et al. 2019) on model outputs.

BBSD is a covariate test on transformed inputs: the transformation is the model itself.
So this detector composes :class:`detectors.covariate.CovariateShiftDetector` on a frame of
outputs instead of re-implementing tests:

* ``predicted_class`` - two-sample chi-square on the predicted classes (Cramér's V effect);
* ``proba_<class>`` - KS on each class score (normed Wasserstein effect). With exactly two
  score columns only the second is tested: the two are complements, a second test would
  only dilute the correction.

All tests are corrected together and returned with ``kind="output"``.

Floors (:data:`OUTPUT_EFFECT_FLOORS`) are half those of input features: a 0.05-sd change of a
score column, a sample-balanced Cramér's V of 0.05 on the predicted classes. Model scores are
bounded and usually bimodal, so their standard deviation is large and 0.1 sd is already a big
move; with the feature floors the detector fell behind the Failing Loudly BBSD baseline
(Rabanser et al. 2019; KS per softmax output, Bonferroni, no floor) at n >= 500 on the digits
replication (``benchmarks/failing_loudly.py``), and with these it matches or beats it at every
n >= 50. Floors only remove alarms, so the false-alarm rate stays at most ``alpha``.

Accepted outputs (the same form at ``fit`` and ``test``):

* a 1-D array or Series of predicted labels;
* an (n, k) array of class scores (classes from ``classes`` or ``0..k-1``; the predicted
  class is the arg-max);
* a DataFrame with ``proba_<class>`` columns and/or a ``prediction`` column, or a binary
  ``score`` column (predicted class ``score >= 0.5`` when there is no ``prediction``).

Outputs are never missing: NaN or inf in them is an error naming the column.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from detectors.base import (
    DetectorInputError,
    Result,
    ShiftTest,
    check_alpha,
    check_correction,
    check_distinct,
    check_effect_floors,
    check_fitted,
    check_int,
    check_random_state,
)
from detectors.covariate import CovariateShiftDetector
from detectors.decision import check_tests

__all__ = ["OutputShiftDetector", "OutputShiftResult", "OUTPUT_EFFECT_FLOORS"]

PREDICTED = "predicted_class"
OUTPUT_EFFECT_FLOORS = {"wasserstein_normed": 0.05, "cramers_v": 0.05}


@dataclass(frozen=True)
class OutputShiftResult(Result):
    """Outcome of :meth:`OutputShiftDetector.test`."""

    is_shift: bool
    tests: tuple[ShiftTest, ...]
    alpha: float
    correction: str
    n_reference: int
    n_current: int

    def with_tests(self, tests) -> "OutputShiftResult":
        """A copy holding re-corrected ``tests`` (order of :attr:`tests`), ``is_shift`` re-derived."""
        tests = check_tests(self, tests)
        return dataclasses.replace(self, tests=tests, is_shift=any(t.drifted for t in tests))


def _check_outputs(frame: pd.DataFrame, role: str) -> None:
    bad = [c for c in frame.columns if c != PREDICTED and not np.isfinite(frame[c].to_numpy(float)).all()]
    if frame[PREDICTED].isna().any():
        bad.insert(0, PREDICTED)
    if bad:
        raise DetectorInputError(f"The {role} model outputs have missing or infinite values in {bad}.")


def outputs_frame(outputs, *, classes=None, role: str = "reference") -> pd.DataFrame:
    """Normalise any accepted output form to a frame of ``predicted_class`` and score columns."""
    if isinstance(outputs, pd.DataFrame):
        frame = _from_dataframe(outputs, role)
    else:
        array = np.asarray(outputs)
        if array.ndim == 1:
            frame = pd.DataFrame({PREDICTED: array})
        elif array.ndim == 2 and array.shape[1] >= 2:
            names = list(classes) if classes is not None else list(range(array.shape[1]))
            if len(names) != array.shape[1]:
                raise DetectorInputError(f"{len(names)} classes given for {array.shape[1]} score columns.")
            frame = pd.DataFrame(array.astype(float), columns=[f"proba_{c}" for c in names])
            columns = [f"proba_{c}" for c in names]
            frame.insert(0, PREDICTED, np.asarray(names, dtype=object)[_argmax(array, role, columns)])
        else:
            raise DetectorInputError(f"The {role} outputs must be labels (n,) or scores (n, k>=2); "
                                     f"got shape {array.shape}.")
    if len(frame) == 0:
        raise DetectorInputError(f"The {role} outputs are empty (0 rows).")
    _check_outputs(frame, role)
    frame[PREDICTED] = frame[PREDICTED].astype(object).astype("category")
    scores = [c for c in frame.columns if c.startswith("proba_")]
    return frame.drop(columns=scores[:1]) if len(scores) == 2 else frame


def _argmax(scores: np.ndarray, role: str, names=None) -> np.ndarray:
    scores = np.asarray(scores, float)
    finite = np.isfinite(scores).all(axis=0)
    if not finite.all():
        names = list(names) if names is not None else list(range(scores.shape[1]))
        bad = [name for name, ok in zip(names, finite) if not ok]
        raise DetectorInputError(f"The {role} model outputs have missing or infinite values in {bad}.")
    return scores.argmax(axis=1)


def _from_dataframe(outputs: pd.DataFrame, role: str) -> pd.DataFrame:
    columns = [str(c) for c in outputs.columns]
    outputs = outputs.set_axis(columns, axis=1)
    scores = [c for c in columns if c.startswith("proba_")]
    frame = outputs[scores].astype(float) if scores else pd.DataFrame(index=outputs.index)
    if "prediction" in columns:
        frame.insert(0, PREDICTED, outputs["prediction"].to_numpy())
    elif scores:
        names = np.array([c[len("proba_"):] for c in scores], dtype=object)
        frame.insert(0, PREDICTED, names[_argmax(outputs[scores].to_numpy(), role, scores)])
    elif "score" in columns:
        score = outputs["score"].to_numpy(float)
        _argmax(score[:, None], role, ["score"])  # NaN / inf check with the same message
        frame.insert(0, PREDICTED, (score >= 0.5).astype(int))
    else:
        raise DetectorInputError(f"The {role} outputs need a 'prediction', 'score' or 'proba_<class>' column; "
                                 f"got {columns}.")
    if "score" in columns and not scores:
        frame["score"] = outputs["score"].to_numpy(float)
    return frame.reset_index(drop=True)


class OutputShiftDetector:
    """BBSD: has the distribution of the model's outputs changed since the benchmark?

    Parameters
    ----------
    alpha : float, default 0.05
    correction : {"bh", "holm", "bonferroni"}, default "bh"
    effect_floors : dict, optional
        Overrides of :data:`OUTPUT_EFFECT_FLOORS`: ``cramers_v`` (predicted classes) and
        ``wasserstein_normed`` (scores).
    min_samples : int, default 30
    classes : sequence, optional
        Class names of the columns of an (n, k) score array.
    random_state : int, default 0
        Unused (closed-form tests); kept for the common detector signature.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> ref = rng.dirichlet([2, 2, 2], size=3000)
    >>> cur = rng.dirichlet([4, 2, 1], size=3000)  # synthetic prior shift
    >>> res = OutputShiftDetector(classes=["a", "b", "c"]).fit(ref).test(cur)
    >>> res.is_shift, [t.name for t in res.tests if t.drifted]
    (True, ['predicted_class', 'proba_a', 'proba_b', 'proba_c'])
    """

    def __init__(self, *, alpha=0.05, correction="bh", effect_floors=None, min_samples=30, classes=None,
                 random_state=0):
        self.alpha = alpha
        self.correction = correction
        self.effect_floors = effect_floors
        self.min_samples = min_samples
        self.classes = classes
        self.random_state = random_state

    def _check_params(self) -> None:
        check_alpha(self.alpha)
        check_correction(self.correction)
        check_effect_floors("effect_floors", self.effect_floors, OUTPUT_EFFECT_FLOORS)
        check_int("min_samples", self.min_samples, minimum=1)
        check_distinct("classes", self.classes, min_length=2)
        check_random_state(self.random_state)

    def _inner(self) -> CovariateShiftDetector:
        return CovariateShiftDetector(alpha=self.alpha, correction=self.correction,
                                      effect_floors={**OUTPUT_EFFECT_FLOORS, **(self.effect_floors or {})},
                                      min_samples=self.min_samples,
                                      categorical_max_unique=10 ** 9, discrete_max_unique=0,
                                      random_state=self.random_state)

    def fit(self, outputs) -> "OutputShiftDetector":
        """Learn the benchmark output distribution.

        Parameters
        ----------
        outputs : array of shape (n,) or (n, k), or DataFrame (see module docstring)
        """
        self._check_params()
        frame = outputs_frame(outputs, classes=self.classes, role="reference")
        self.detector_ = self._inner().fit(frame)
        self.output_columns_ = tuple(frame.columns)
        return self

    def test(self, outputs) -> OutputShiftResult:
        """Test production outputs (same form as at ``fit``) against the benchmark ones."""
        check_fitted(self, "detector_")
        self._check_params()
        frame = outputs_frame(outputs, classes=self.classes, role="current")
        result = self.detector_.test(frame)
        tests = tuple(dataclasses.replace(t, kind="output") for t in result.features)
        return OutputShiftResult(is_shift=result.is_shift, tests=tests, alpha=result.alpha,
                                 correction=result.correction, n_reference=result.n_reference,
                                 n_current=result.n_current)
