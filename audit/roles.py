"""Column roles: the rules an audit uses to read a table's columns.

A role given explicitly (an upload's schema, ``PATCH``, the CLI's ``--schema``) is kept; a column
the domain pack names as a context is a ``context``; otherwise naming conventions decide (``label``,
``prediction``, ``proba_<class>``, ``emb_<k>``...), and a column no rule matches is a ``feature``.

>>> infer_roles(["id", "label", "prediction", "proba_cat", "site", "age"], context_columns=["site"])
{'id': 'id', 'label': 'label', 'prediction': 'prediction', 'proba_cat': 'score', 'site': 'context', 'age': 'feature'}
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

import pandas as pd

__all__ = ["ROLES", "SOURCES", "infer_roles", "role_source", "describe_columns", "with_roles", "schema_differs",
           "roles_for_audit"]

ROLES = ("id", "feature", "context", "label", "prediction", "score", "embedding", "text",
         "timestamp", "annotator", "ignore")
EXACT_NAMES = {"id": "id", "label": "label", "prediction": "prediction", "score": "score",
               "embedding": "embedding", "timestamp": "timestamp", "annotator_id": "annotator",
               "text": "text"}
PATTERNS = ((re.compile(r"^proba_.+"), "score"), (re.compile(r"^emb_\d+$"), "embedding"))


def infer_roles(columns: Iterable[str], *, schema: Mapping[str, str] | None = None,
                context_columns: Iterable[str] = ()) -> dict[str, str]:
    """Role for every column: schema first, then domain contexts, then naming conventions."""
    schema = schema or {}
    contexts = set(context_columns)
    roles = {}
    for name in columns:
        if name in schema:
            roles[name] = schema[name]
        elif name in contexts:
            roles[name] = "context"
        else:
            roles[name] = _by_convention(name)
    return roles


def _by_convention(name: str) -> str:
    lowered = name.lower()
    if lowered in EXACT_NAMES:
        return EXACT_NAMES[lowered]
    for pattern, role in PATTERNS:
        if pattern.match(lowered):
            return role
    return "feature"


# where a stored role came from; only "schema" (given by the user) is kept as stored at audit time
SOURCES = ("schema", "domain pack", "inferred from name", "default")


def role_source(name: str, role: str, given: Iterable[str] = ()) -> str:
    """``schema``: given in the upload's schema (or by PATCH); ``domain pack``: a context the pack names;
    ``inferred from name``: a naming convention (``label``, ``proba_<class>``...); ``default``: a feature,
    because no rule matched."""
    if name in set(given):
        return "schema"
    if role != "feature" and _by_convention(name) == role:
        return "inferred from name"
    return "domain pack" if role == "context" else "default"


def describe_columns(frame: pd.DataFrame, roles: Mapping[str, str],
                     explicit: Iterable[str] = ()) -> list[dict[str, str]]:
    """Column records as stored; ``source`` (:func:`role_source`) says whether the role was given
    (``schema``) or inferred, so that an audit can re-infer the inferred ones under its own domain pack."""
    given = set(explicit)
    return [{"name": c, "role": roles[c], "dtype": str(frame[c].dtype),
             "source": role_source(c, roles[c], given)} for c in frame.columns]


def with_roles(columns: Iterable[Mapping[str, Any]], changes: Mapping[str, str]) -> list[dict[str, Any]]:
    """Stored column records with ``changes`` ({column: role}, validated) applied as given roles."""
    return [{**c, "role": changes[c["name"]], "source": "schema"} if c["name"] in changes else dict(c)
            for c in columns]


def schema_differs(columns: Iterable[Mapping[str, Any]], schema: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """{column: (stored role, schema role)} where an upload's schema asks for another role than stored."""
    stored = {str(c["name"]): str(c["role"]) for c in columns}
    return {c: (stored[c], r) for c, r in schema.items() if c in stored and stored[c] != r}


def roles_for_audit(columns: Iterable[Mapping[str, Any]], *, context_columns: Iterable[str] = ()) -> dict[str, str]:
    """Roles of a stored dataset under the audit's domain pack: the same rules as an upload or the CLI
    (schema, then the pack's context columns, then naming conventions), applied at audit time.

    A role given in the upload's schema is kept; an inferred one is inferred again, so a dataset
    uploaded without ``domain`` still gets the audit pack's context columns. Records stored before
    roles had a ``source`` keep any role that naming conventions would not give.
    """
    contexts = set(context_columns)
    roles = {}
    for c in columns:
        name, stored, source = str(c["name"]), str(c["role"]), c.get("source")
        if source == "schema" or (source is None and stored != _by_convention(name)):
            roles[name] = stored
        else:
            roles[name] = "context" if name in contexts else _by_convention(name)
    return roles
