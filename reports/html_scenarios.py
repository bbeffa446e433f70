"""The "known scenarios" part of the report: which of the pack's expert scenarios explains the changes."""
from __future__ import annotations

from reports.formatting import shorten
from reports.result import AuditEvidence

__all__ = ["scenario_view"]

SCENARIO_CAP = 6


def scenario_view(audit: AuditEvidence) -> dict:
    """``{"fits", "rows", "none_fits"}``: the best-fitting scenario (or None), every scenario checked, and
    whether the audit had changes that none of the known scenarios explains."""
    rows = []
    for match in audit.scenarios[:SCENARIO_CAP]:
        rows.append({
            "title": shorten(match.title, 120), "cause": shorten(match.cause, 300),
            "action": shorten(match.action, 400),
            "reference": shorten(match.reference or "", 240), "score": f"{match.score:+.2f}", "fits": match.fits,
            "signals": [{"status": c.status, "signal": shorten(c.signal, 160), "evidence": shorten(c.evidence, 300)}
                        for c in match.signals[:8]],
            "n_explains": len(match.explains)})
    fits = next((r for r in rows if r["fits"]), None)
    return {"fits": fits, "rows": rows, "none_fits": bool(rows) and fits is None}
