"""Where each column of an image upload came from: derived from the image, or the user's own.

:func:`column_sources` is what an image upload's validation report records (``images.columns``,
served as ``ValidationOut.images``): one entry per derived image value, one for the appearance
embedding (named ``emb_*``), one per pack context derived from an image value and one per pack
context (or would-be derived name) the user's manifest supplied, which wins. :func:`derived_ref`
is what an audit's benchmark/production reference carries of it, so the report can say which
context values were derived.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["DERIVED", "USER", "column_sources", "derived_ref"]

DERIVED, USER = "derived_from_image", "user_metadata"


def _entry(column: str, source: str, *, extractor: str | None = None, version: str | None = None,
           derived_from: str | None = None, feeds: Iterable[str] = ()) -> dict[str, Any]:
    return {"column": column, "source": source, "extractor": extractor, "extractor_version": version,
            "derived_from": derived_from, "feeds_context": list(feeds)}


def column_sources(user_columns: Iterable[str], added_context: Iterable[str], pack: Any) -> list[dict[str, Any]]:
    """Per column: source, extractor and its version, the image value a context was mapped from,
    and the pack contexts it feeds.

    Parameters
    ----------
    user_columns : the manifest's columns (the ``image`` column excluded)
    added_context : the pack context columns derived from image values (the user's win)
    pack : the domain pack (``derived`` and ``context``), or ``None``
    """
    import imagecontext  # lazy: imagecontext (OpenCV) ~0.3 s; the API starts without it, only images need it

    version = imagecontext.EXTRACTOR_VERSION
    user, added = list(user_columns), list(added_context)
    rules: Mapping[str, Any] = getattr(pack, "derived", None) or {}
    contexts = [c.name for c in getattr(pack, "context", ()) or ()]
    fed: dict[str, list[str]] = {}
    for column in added:
        fed.setdefault(rules[column].source, []).append(column)
    out = []
    for column in imagecontext.COLUMNS:
        if column in user:
            out.append(_entry(column, USER, feeds=[c for c in contexts if c == column]))
        else:
            out.append(_entry(column, DERIVED, extractor=imagecontext.extractor_of(column), version=version,
                              feeds=fed.get(column, ())))
    out.append(_entry(f"{imagecontext.EMBEDDING_PREFIX}*", DERIVED,
                      extractor=imagecontext.extractor_of(imagecontext.embedding_columns()[0]), version=version))
    for column in added:
        source = rules[column].source
        out.append(_entry(column, DERIVED, extractor=imagecontext.extractor_of(source), version=version,
                          derived_from=source, feeds=[column]))
    out += [_entry(column, USER, feeds=[column]) for column in contexts
            if column in user and column not in imagecontext.COLUMNS]
    return out


def derived_ref(validation: Any) -> dict[str, Any]:
    """``{"derived_context": {context: {"from", "extractor", "extractor_version"}}}`` for a dataset
    whose validation report records image-derived contexts, else ``{}``."""
    images = validation.get("images") if isinstance(validation, Mapping) else None
    if not isinstance(images, Mapping):
        return {}
    derived = {e["column"]: {"from": e.get("derived_from"), "extractor": e.get("extractor"),
                             "extractor_version": e.get("extractor_version")}
               for e in images.get("columns") or () if isinstance(e, Mapping)
               and e.get("source") == DERIVED and e.get("derived_from")}
    if not derived:  # recorded before per-column sources: the names alone
        derived = {c: {"from": None, "extractor": None, "extractor_version": images.get("extractor_version")}
                   for c in images.get("derived_context") or () if isinstance(c, str)}
    return {"derived_context": derived} if derived else {}
