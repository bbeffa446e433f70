"""An upload's column schema, checked against the roles the audit knows.

The rules that give every column its role live in the audit library (:mod:`audit.roles`); they are
re-exported here so that the service's modules read roles from one place."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from audit.roles import (
    ROLES,
    SOURCES,
    describe_columns,
    infer_roles,
    role_source,
    roles_for_audit,
    schema_differs,
    with_roles,
)
from service.errors import InvalidRequest

__all__ = ["parse_schema", "ROLES", "SOURCES", "describe_columns", "infer_roles", "role_source", "roles_for_audit",
           "schema_differs", "with_roles"]


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


