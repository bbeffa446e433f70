"""Reading the AuditResult for the renderings (HTML, Markdown): the pack's title, whether the audit was
stored, and what the detectors recorded (not a section's default)."""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from reports.formatting import capitalise
from reports.result import AuditEvidence

__all__ = ["pack_title", "is_local", "LOCAL_IDS", "recorded"]

LOCAL_IDS = frozenset({"local", "unsaved", ""})  # audits run by the CLI are not stored: no id worth a title


def recorded(record: BaseModel, name: str | None = None) -> Any:
    """The field ``name`` as the audit recorded it, ``None`` when it did not; without ``name``, whether the
    record holds anything at all. A section's default (``is_shift`` false, ``status`` succeeded) must not
    read as a test's answer in an audit that never ran that test."""
    if name is None:
        return bool(record.model_fields_set)
    return getattr(record, name) if name in record.model_fields_set else None


def is_local(audit: AuditEvidence) -> bool:
    return audit.id.strip().lower() in LOCAL_IDS


def pack_title(audit: AuditEvidence) -> str:
    """The pack's title ("Crash fatality (NASS CDS occupants)"), not its id: as recorded in the
    AuditResult, else a built-in pack's, else the id made readable."""
    if audit.domain_title.strip():
        return audit.domain_title
    name = audit.domain or audit.parameters.domain_pack or "generic"
    return _builtin_title(name) or capitalise(name.replace("_", " "))


@lru_cache(maxsize=16)
def _builtin_title(name: str) -> str | None:
    try:
        # lazy: the domains package loads pandas (~0.6 s), and only an audit without its pack's title needs it
        from domains.loader import BUILTIN_ALIASES, list_builtin, load_builtin
        name = BUILTIN_ALIASES.get(name, name)  # a former name ("medical") is the same pack
        return load_builtin(name).title if name in list_builtin() else None
    except Exception:  # a title is cosmetic; the report must render without the domains package
        return None
