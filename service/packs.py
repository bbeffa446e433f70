"""Domain packs for the service: the built-ins from ``domains`` plus custom ones stored as YAML."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.errors import Conflict, InvalidRequest
from service.models import DomainPackRow


@dataclass(frozen=True)
class PackView:
    """What the upload path needs of a pack: its name, context columns and expectations."""

    name: str
    context_names: tuple[str, ...] = ()
    expectations: tuple[dict[str, Any], ...] = ()
    pack: Any = field(default=None, compare=False)


class PackRegistry:
    """Looks packs up by name: built-in first, then the custom packs in the database."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions

    def names(self) -> list[str]:
        from domains import list_builtin

        with self.sessions() as s:
            custom = list(s.scalars(select(DomainPackRow.name).order_by(DomainPackRow.name)))
        return list(list_builtin()) + custom

    def get(self, name: str) -> Any:
        from domains import list_builtin, load_builtin, load_pack_yaml

        if name in list_builtin():
            return load_builtin(name)
        with self.sessions() as s:
            row = s.get(DomainPackRow, name)
        if row is None:
            known = self.names()
            raise InvalidRequest(f"Unknown domain {name!r}; known domains: {known}.", code="unknown_domain",
                                 details={"domain": name, "known": known})
        return load_pack_yaml(row.yaml)

    def add(self, text: str) -> Any:
        """Validate and store a custom pack; its name must not clash with another pack."""
        from domains import PackError, list_builtin, load_pack_yaml

        try:
            pack = load_pack_yaml(text)
        except PackError as exc:
            raise InvalidRequest(str(exc), code="invalid_domain_pack",
                                 details={"faults": list(getattr(exc, "faults", ()))}) from None
        if pack.name in list_builtin():
            raise Conflict(f"{pack.name!r} is a built-in domain; choose another name.",
                           details={"domain": pack.name})
        with self.sessions.begin() as s:
            if s.get(DomainPackRow, pack.name) is not None:
                raise Conflict(f"A domain pack named {pack.name!r} already exists.",
                               details={"domain": pack.name})
            s.add(DomainPackRow(name=pack.name, yaml=text, created_at=datetime.now(timezone.utc)))
        return pack


def resolve_pack(runtime: Any, name: str) -> PackView:
    """The pack called ``name`` (422 ``unknown_domain`` naming the known ones otherwise)."""
    return view(runtime.packs.get(name))


def view(pack: Any) -> PackView:
    return PackView(name=pack.name, context_names=tuple(c.name for c in pack.context),
                    expectations=tuple(_expectation_dict(e) for e in pack.all_expectations()), pack=pack)


def _expectation_dict(expectation: Any) -> dict[str, Any]:
    data = expectation.model_dump(mode="json")
    kwargs = {k: v for k, v in data.items() if k not in ("type", "column") and v is not None}
    if "value_set" in kwargs:
        kwargs["value_set"] = list(kwargs["value_set"])
    return {"type": data["type"], "column": data.get("column"), "kwargs": kwargs}
