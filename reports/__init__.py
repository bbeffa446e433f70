"""Turns an AuditResult into the limitation ranking, the next-round plan and the renderings
(HTML, Markdown model-card section, JSON, CSV, JSON Lines). Never computes a statistical test.

Registration is explicit: every public name is listed in :data:`_EXPORTS` with the module that
defines it. Imports are lazy (PEP 562), so the API can import :mod:`reports.result` (the typed
AuditResult) at start-up without loading the scientific stack or Evidently.
The input contract (the AuditResult fields read here) is documented in ``reports/SCHEMA.md``.
"""
from importlib import import_module

_EXPORTS = {
    "Limitation": "reports.limitations",
    "SeverityPriors": "reports.limitations",
    "rank_limitations": "reports.limitations",
    "verdict": "reports.limitations",
    "fails_gate": "reports.limitations",
    "GATE_LEVELS": "reports.limitations",
    "NextRoundPlan": "reports.next_round",
    "SliceAllocation": "reports.next_round",
    "LabelRequest": "reports.next_round",
    "plan_next_round": "reports.next_round",
    "render_html": "reports.html",
    "render_markdown": "reports.markdown",
    "to_json": "reports.exports",
    "to_csv": "reports.exports",
    "to_jsonl": "reports.exports",
    "AuditResult": "reports.result",
    "write_evidently_page": "reports.evidently_page",
    "evidently_page_html": "reports.evidently_page",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'reports' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
