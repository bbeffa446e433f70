"""A stored AuditResult read back where audits are listed: only the sections shown are validated.

The index page and ``GET /v1/audits`` show up to a thousand audits' verdicts and dataset names, and a
round's series reads the plan of the audit it answers. Validating a whole result costs about 1 ms (0.1 s
with thousands of features), and a section an older version stored in a shape the contract no longer
accepts would hide a verdict that still fits. One audit's whole result is validated where it is served
(``GET /v1/audits/{id}``).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reports.result import AuditEvidence, as_evidence

__all__ = ["stored_sections", "shown_sections"]


def stored_sections(result: Mapping[str, Any] | None, *sections: str) -> AuditEvidence:
    """``sections`` of a stored result (JSON) as typed evidence; the others, and any it lacks, stay at their
    defaults (a verdict or a plan the result does not have is ``None``).

    Raises
    ------
    ValueError
        A section does not fit the AuditResult contract (the message names the field).
    """
    return as_evidence({name: result[name] for name in sections if result is not None and name in result})


def shown_sections(result: Mapping[str, Any] | None, *sections: str) -> tuple[AuditEvidence, str | None]:
    """:func:`stored_sections` for a listing of many audits: a section that does not fit leaves all of them
    at their defaults and comes back as a message instead of failing the whole list for one audit."""
    try:
        return stored_sections(result, *sections), None
    except ValueError as exc:
        return as_evidence({}), (f"The stored result does not fit the AuditResult contract ({str(exc)[:300]}); "
                                 "run the audit again to get one that does.")
