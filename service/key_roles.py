"""API keys with roles, and the role every protected route needs.

Three roles, each including the one before it:

* ``read``: results, reports, pages, listings, ``/metrics`` (a dashboard, a CI job that reads);
* ``audit``: ``read`` plus uploading and registering datasets, starting audits, adding benchmark
  rounds, acknowledging and resolving alerts;
* ``admin``: everything, including what configures or removes: monitors (their SQL and directory
  sources and webhooks), domain packs, deletes.

Keys come from the settings (``CONTEXTSHIFT_API_KEYS`` are admin keys, as they always were;
``CONTEXTSHIFT_API_KEYS_READ`` and ``CONTEXTSHIFT_API_KEYS_AUDIT`` the others) and from a keys
file (``CONTEXTSHIFT_API_KEYS_FILE``: one ``<role> <key>`` per line, ``#`` comments). A route's
role is looked up in :data:`ROUTE_ROLES` by method and path template; a route missing there
needs ``admin`` (and the test that walks every route fails, so it gets one).
"""
from __future__ import annotations

import hmac
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ROLES", "ROUTE_ROLES", "Keyring", "document_roles", "route_role"]

ROLES = ("read", "audit", "admin")
_RANK = {role: i for i, role in enumerate(ROLES)}
PUBLIC = frozenset({("GET", "/healthz"), ("GET", "/docs"), ("GET", "/docs/init.js"),
                    ("GET", "/docs/assets/{name}"), ("GET", "/openapi.json"), ("HEAD", "/openapi.json")})
ROUTE_ROLES: dict[tuple[str, str], str] = {
    ("GET", "/"): "read",
    ("GET", "/metrics"): "read",
    ("GET", "/v1/datasets"): "read",
    ("GET", "/v1/datasets/{dataset_id}"): "read",
    ("POST", "/v1/datasets"): "audit",
    ("POST", "/v1/datasets/register"): "audit",
    ("PATCH", "/v1/datasets/{dataset_id}"): "audit",  # column roles only; the data is unchanged
    ("DELETE", "/v1/datasets/{dataset_id}"): "admin",
    ("GET", "/v1/audits"): "read",
    ("GET", "/v1/audits/{audit_id}"): "read",
    ("GET", "/v1/audits/{audit_id}/report"): "read",
    ("GET", "/v1/audits/{audit_id}/report.md"): "read",
    ("GET", "/v1/audits/{audit_id}/report.evidently"): "read",
    ("GET", "/v1/audits/{audit_id}/next-round"): "read",
    ("POST", "/v1/audits"): "audit",
    ("DELETE", "/v1/audits/{audit_id}"): "admin",
    ("GET", "/v1/domains"): "read",
    ("GET", "/v1/domains/{name}"): "read",
    ("POST", "/v1/domains"): "admin",
    ("PUT", "/v1/domains/{name}"): "admin",
    ("DELETE", "/v1/domains/{name}"): "admin",
    ("GET", "/v1/benchmarks"): "read",
    ("GET", "/v1/benchmarks/{name}"): "read",
    ("GET", "/v1/benchmarks/{name}/report"): "read",
    ("GET", "/v1/benchmarks/{name}/rounds/{number}/export"): "read",
    ("POST", "/v1/benchmarks/{name}/rounds"): "audit",
    ("GET", "/v1/monitors"): "read",
    ("GET", "/v1/monitors/{monitor_id}"): "read",
    ("GET", "/v1/monitors/{monitor_id}/runs"): "read",
    ("GET", "/v1/monitors/{monitor_id}/report"): "read",
    ("POST", "/v1/monitors"): "admin",
    ("POST", "/v1/monitors/{monitor_id}/run"): "admin",
    ("DELETE", "/v1/monitors/{monitor_id}"): "admin",
    ("GET", "/v1/alerts"): "read",
    ("POST", "/v1/alerts/{alert_id}/acknowledge"): "audit",
    ("POST", "/v1/alerts/{alert_id}/resolve"): "audit",
}


def route_role(method: str, path: str) -> str:
    """The role ``method path`` (a route's path template) needs; ``admin`` when unlisted."""
    return ROUTE_ROLES.get((method.upper(), path), "admin")


def allows(role: str, needed: str) -> bool:
    return _RANK[role] >= _RANK[needed]


def _read_keys_file(path: Path) -> list[tuple[str, str]]:
    pairs = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        parts = text.split()
        if len(parts) != 2 or parts[0] not in ROLES:
            raise ValueError(f"{path}, line {number}: expected '<role> <key>' with a role among {', '.join(ROLES)}")
        pairs.append((parts[0], parts[1]))
    return pairs


@dataclass(frozen=True)
class Keyring:
    """Every configured key with its role."""

    keys: tuple[tuple[bytes, str], ...]

    @classmethod
    def from_settings(cls, settings: Any) -> "Keyring":
        """Keys from the settings and the keys file; ``ValueError`` for a bad file or a key given two roles."""
        pairs = [("admin", k) for k in settings.api_keys] + [("read", k) for k in settings.api_keys_read]
        pairs += [("audit", k) for k in settings.api_keys_audit]
        if settings.api_keys_file is not None:
            pairs += _read_keys_file(settings.api_keys_file)
        roles: dict[str, str] = {}
        for role, key in pairs:
            if roles.setdefault(key, role) != role:
                raise ValueError(f"an API key is given two roles ({roles[key]} and {role}); give each key one")
        return cls(tuple((key.encode(), role) for key, role in roles.items()))

    def role_of(self, presented: bytes) -> str | None:
        """The role of ``presented``, comparing with every key in constant time (no early exit)."""
        found = None
        for key, role in self.keys:
            if hmac.compare_digest(presented, key):
                found = role
        return found


def document_roles(schema: dict[str, Any]) -> dict[str, Any]:
    """List the roles in the bearer scheme and each operation's role (OpenAPI 3.1 lets a non-OAuth
    security requirement name roles), with its 403; in place, returns ``schema``."""
    schemes = schema.setdefault("components", {}).setdefault("securitySchemes", {})
    bearer = next(iter(schemes), "HTTPBearer")
    schemes.setdefault(bearer, {"type": "http", "scheme": "bearer"})
    schemes[bearer]["description"] = (
        "API key with a role: `read` (results, reports, pages, metrics), `audit` (read, plus uploads, "
        "audits, rounds and alert acknowledgement), `admin` (everything: monitors, sources, webhooks, "
        "domain packs, deletes). Each operation names the role it needs.")
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            if (method.upper(), path) in PUBLIC or not isinstance(operation, dict):
                continue
            role = route_role(method, path)
            operation["security"] = [{bearer: [role]}]
            operation["x-required-role"] = role
            operation.setdefault("responses", {}).setdefault(
                "403", {"description": f"The key's role does not allow this (needs `{role}`)."})
    return schema
