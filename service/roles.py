"""Column roles (SPEC §2–§3): explicit schema, else the domain pack, else naming conventions."""
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


def describe_columns(frame: pd.DataFrame, roles: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"name": c, "role": roles[c], "dtype": str(frame[c].dtype)} for c in frame.columns]
