"""Reading the AuditResult for the renderings (HTML, Markdown): whatever form it arrives in
(a pydantic model, a JSON dict), the pack's title and whether the audit was stored."""
from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from reports.formatting import capitalise, get
from reports.result import as_evidence

__all__ = ["as_dict", "pack_title", "is_local", "LOCAL_IDS"]

LOCAL_IDS = frozenset({"local", "unsaved", ""})  # audits run by the CLI are not stored: no id worth a title


def as_dict(value: Any) -> Any:
    """A pydantic model or a result record as its JSON-ready dict; anything else unchanged."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value


def legacy(audit: Any) -> dict:
    """The validated evidence as JSON, for the builders that still read dicts."""
    return as_evidence(audit).model_dump(mode="json", exclude_unset=True)


def is_local(audit: Mapping) -> bool:
    return str(get(audit, "id") or "").strip().lower() in LOCAL_IDS


def pack_title(audit: Mapping) -> str:
    """The pack's title ("Crash fatality (NASS CDS occupants)"), not its id: as recorded in the
    AuditResult, else a built-in pack's, else the id made readable."""
    params = get(audit, "parameters", default={})
    for value in (get(audit, "domain_title"), get(audit, "pack", "title"), get(params, "domain_title")):
        if isinstance(value, str) and value.strip():
            return value
    name = str(get(audit, "domain") or get(params, "domain_pack") or "generic")
    return _builtin_title(name) or capitalise(name.replace("_", " "))


@lru_cache(maxsize=16)
def _builtin_title(name: str) -> str | None:
    try:
        from domains.loader import BUILTIN_ALIASES, list_builtin, load_builtin
        name = BUILTIN_ALIASES.get(name, name)  # a former name ("medical") is the same pack
        return load_builtin(name).title if name in list_builtin() else None
    except Exception:  # a title is cosmetic; the report must render without the domains package
        return None
