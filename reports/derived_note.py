"""One sentence for the report's context section: which context values were derived from images.

An image upload's contexts come from the images through the pack's ``derived:`` block; the audit's
benchmark/production references carry them (``derived_context``: context -> the image value, the
extractor and its version). A reader should know that ``illumination`` was measured from pixels,
not recorded by a person.

>>> import textwrap
>>> from reports.result import AuditEvidence
>>> derived = {"illumination": {"from": "img_brightness", "extractor": "imagecontext.pixel_stats",
...                             "extractor_version": "2"}}
>>> audit = AuditEvidence.model_validate({"benchmark": {"derived_context": derived},
...                                       "production": {"derived_context": derived}})
>>> print(textwrap.fill(derived_note(audit), 100))
Derived from the images (imagecontext version 2), measured from the pixels rather than entered by a
person: illumination (from img_brightness, by imagecontext.pixel_stats) in benchmark and production.
"""
from __future__ import annotations

from collections.abc import Mapping

from reports.formatting import shorten
from reports.result import AuditEvidence

__all__ = ["derived_note"]

_SHOWN = 12  # contexts named; a pack has a handful


def derived_note(audit: AuditEvidence) -> str | None:
    """The sentence, or ``None`` when no context value of either side was derived."""
    sides = {"benchmark": audit.benchmark.derived_context or {}, "production": audit.production.derived_context or {}}
    names = list(dict.fromkeys([*sides["benchmark"], *sides["production"]]))
    if not names:
        return None
    # each context's entry is an open record written by the extractor: read what it holds
    versions = sorted({str(info.get("extractor_version")) for d in sides.values() for info in d.values()
                       if isinstance(info, Mapping) and info.get("extractor_version")})
    parts = []
    for name in names[:_SHOWN]:
        info = sides["benchmark"].get(name) or sides["production"].get(name)
        info = info if isinstance(info, Mapping) else {}
        how = ", ".join(p for p in (f"from {info['from']}" if info.get("from") else "",
                                    f"by {info['extractor']}" if info.get("extractor") else "") if p)
        where = [s for s in ("benchmark", "production") if name in sides[s]]
        parts.append(f"{shorten(name, 60)}{f' ({shorten(how, 120)})' if how else ''} in {' and '.join(where)}")
    more = f"; and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    version = f" (imagecontext version {', '.join(versions)})" if versions else ""
    return (f"Derived from the images{version}, measured from the pixels rather than entered by a person: "
            f"{'; '.join(parts)}{more}.")
