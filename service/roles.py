"""Column roles: explicit schema, else the domain pack, else naming conventions."""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

import pandas as pd

from service.errors import InvalidRequest

ROLES = ("id", "feature", "context", "label", "prediction", "score", "embedding", "text",
         "timestamp", "annotator", "ignore")
EXACT_NAMES = {"id": "id", "label": "label", "prediction": "prediction", "score": "score",
               "embedding": "embedding", "timestamp": "timestamp", "annotator_id": "annotator",
               "text": "text"}
PATTERNS = ((re.compile(r"^proba_.+"), "score"), (re.compile(r"^emb_\d+$"), "embedding"))


def parse_schema(schema: Any, columns: Iterable[str], filename: str = "") -> dict[str, str]:
    """Validate a user schema ``{"columns": {name: role}}`` (or the bare mapping)."""
    if schema is None:
        return {}
    if isinstance(schema, Mapping) and isinstance(schema.get("columns"), Mapping):
        schema = schema["columns"]
    if not isinstance(schema, Mapping) or not all(isinstance(v, str) for v in schema.values()):
        raise InvalidRequest('Schema must be a JSON object {"columns": {"<column>": "<role>"}}.',
                             code="invalid_schema")
    known = set(columns)
    unknown_cols = sorted(set(schema) - known)
    if unknown_cols:
        raise InvalidRequest(f"Schema names columns not in {filename or 'the file'}: {unknown_cols}.",
                             code="invalid_schema", details={"columns": unknown_cols, "file": filename})
    bad = {c: r for c, r in schema.items() if r not in ROLES}
    if bad:
        raise InvalidRequest(f"Unknown column roles {bad}; roles are {list(ROLES)}.",
                             code="invalid_schema", details={"roles": bad, "allowed": list(ROLES)})
    return dict(schema)


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


def describe_columns(frame: pd.DataFrame, roles: Mapping[str, str],
                     explicit: Iterable[str] = ()) -> list[dict[str, str]]:
    """Column records as stored; ``source`` says whether the role was given (``schema``) or inferred,
    so that an audit can re-infer the inferred ones under its own domain pack."""
    given = set(explicit)
    return [{"name": c, "role": roles[c], "dtype": str(frame[c].dtype),
             "source": "schema" if c in given else "inferred"} for c in frame.columns]


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


def role_disagreements(benchmark: Mapping[str, str], production: Mapping[str, str]) -> list[dict[str, str]]:
    """Audit notes for shared columns whose roles differ between the two datasets."""
    return [{"part": f"column {name}",
             "reason": f"'{name}' is a {benchmark[name]} column in the benchmark but a {production[name]} column in "
                       "production; it is compared only where both roles allow it. Give both uploads the same schema."}
            for name in benchmark if name in production and benchmark[name] != production[name]]
