"""Turns an AuditResult into the limitation ranking, the next-round plan and the renderings
(HTML, Markdown model-card section, JSON, CSV, JSON Lines). Never computes a statistical test.

Registration is explicit: every public name is imported here and listed in ``__all__``.
The input contract (the AuditResult fields read here) is documented in ``reports/SCHEMA.md``.
"""
from reports.exports import to_csv, to_json, to_jsonl
from reports.html import render_html
from reports.limitations import GATE_LEVELS, Limitation, SeverityPriors, fails_gate, rank_limitations, verdict
from reports.markdown import render_markdown
from reports.next_round import LabelRequest, NextRoundPlan, SliceAllocation, plan_next_round

__all__ = [
    "Limitation",
    "SeverityPriors",
    "rank_limitations",
    "verdict",
    "fails_gate",
    "GATE_LEVELS",
    "NextRoundPlan",
    "SliceAllocation",
    "LabelRequest",
    "plan_next_round",
    "render_html",
    "render_markdown",
    "to_json",
    "to_csv",
    "to_jsonl",
    "write_evidently_page",
    "evidently_page_html",
]


def __getattr__(name: str):
    # Lazy: importing Evidently costs seconds and pulls telemetry; only load it when asked for.
    if name in ("write_evidently_page", "evidently_page_html"):
        from reports import evidently_page
        return getattr(evidently_page, name)
    raise AttributeError(f"module 'reports' has no attribute {name!r}")
