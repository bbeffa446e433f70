"""Pure statistics for shift detection: no I/O, no HTTP, no HTML.

Registration is explicit: every public detector is imported here and listed in ``__all__``.
"""
from detectors.base import DetectorInputError, NotFittedError
from detectors.correction import CORRECTIONS, adjust_pvalues, benjamini_hochberg, bonferroni, holm, is_shift
from detectors.intervals import bootstrap_interval, newcombe_interval, wilson_interval

__all__ = [
    "DetectorInputError",
    "NotFittedError",
    "CORRECTIONS",
    "adjust_pvalues",
    "benjamini_hochberg",
    "bonferroni",
    "holm",
    "is_shift",
    "bootstrap_interval",
    "newcombe_interval",
    "wilson_interval",
]

# --- covariate (issue 3) ---
# --- label (issue 4) ---
# --- context (issue 5) ---
