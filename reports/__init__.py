"""Turns an AuditResult into the limitation ranking, the next-round plan and the renderings
(HTML, Markdown model-card section, JSON, CSV, JSON Lines). Never computes a statistical test.

Registration is explicit: every public name is listed in :data:`_EXPORTS` with the module that
defines it. Imports are lazy (PEP 562), so the API can import :mod:`reports.result` (the typed
AuditResult) at start-up without loading the scientific stack or Evidently.
The input contract (the AuditResult fields read here) is documented in ``reports/SCHEMA.md``.
"""
import warnings
from importlib import import_module

_EXPORTS = {
    "LimitationRecord": "reports.result",
    "SeverityPriors": "reports.limitations",
    "rank_limitations": "reports.limitations",
    "verdict": "reports.limitations",
    "fails_gate": "reports.limitations",
    "GATE_LEVELS": "reports.limitations",
    "NextRound": "reports.result",
    "Allocation": "reports.result",
    "LabelRequest": "reports.result",
    "plan_next_round": "reports.next_round",
    "conclude": "reports.conclusions",
    "ReportImages": "reports.report_images",
    "report_images": "reports.report_images",
    "render_html": "reports.html",
    "render_markdown": "reports.markdown",
    "to_json": "reports.exports",
    "to_csv": "reports.exports",
    "to_jsonl": "reports.exports",
    "AuditResult": "reports.result",
    "write_evidently_page": "reports.evidently_page",
    "evidently_page_html": "reports.evidently_page",
}
# former names of the one plan type and the one limitation type, still importable with a DeprecationWarning
_RENAMED = {"NextRoundPlan": "NextRound", "SliceAllocation": "Allocation", "Limitation": "LimitationRecord"}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    if name in _RENAMED:
        new = _RENAMED[name]
        warnings.warn(f"reports.{name} is now reports.{new}, the type the AuditResult stores; "
                      f"the old name will be removed.", DeprecationWarning, stacklevel=2)
        return getattr(import_module(_EXPORTS[new]), new)
    raise AttributeError(f"module 'reports' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
