"""The audit as a library: a pure function from two tables, their roles, a domain pack and typed
options to the typed AuditResult (:func:`run_audit`).

* :mod:`audit.pipeline` runs the detectors stage by stage and corrects the audit's tests as one
  family; :mod:`audit.engine` recomputes stage results from exact counts when an engine scanned
  every row; :mod:`audit.data_quality` and :mod:`audit.role_hints` write the notes on the input.
* :mod:`audit.claims` is the claim layer: from the typed evidence of an audit and the rows behind
  it, it decides which findings are claims, which claim a finding restates, and which cause
  explains which side effect (one mechanism for every kind).

It imports ``reports``, ``detectors`` and ``domains``, never ``service``: what needs a deployment
(database, settings, image cache, cluster) is passed in. The names below load on first use (the
pipeline needs SciPy and scikit-learn, the options pydantic), so importing :mod:`audit.errors`
stays as light as the standard library.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from audit.errors import AuditInputError

if TYPE_CHECKING:
    from audit.options import AuditOptions
    from audit.run import AuditData, AuditOutcome, run_audit

__all__ = ["AuditData", "AuditInputError", "AuditOptions", "AuditOutcome", "run_audit"]

_LAZY = {"AuditData": "audit.run", "AuditOutcome": "audit.run", "run_audit": "audit.run",
         "AuditOptions": "audit.options"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'audit' has no attribute {name!r}")
