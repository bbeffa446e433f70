"""Domain packs for the service: the built-ins from ``domains`` plus custom ones stored as YAML.

Custom packs are versioned: ``PUT`` stores version n+1 (every version is kept, so an audit
pinned to version n still runs on it) and ``DELETE`` retires the name. Parsed packs are
cached by the SHA-256 of their YAML: listing the domains parses nothing twice.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import yaml
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from domains import PackError, is_builtin, list_builtin, load_builtin, load_pack_yaml
from service.errors import Conflict, InvalidRequest, NotFound
from service.orm import rowcount, storable_key
from service.packs.limits import PackLimits, check_pack_limits, fast_loader
from service.packs.models import DomainPackRow, DomainPackVersionRow

MAX_YAML_DEPTH = 64  # a pack is a handful of levels deep; deeper is an attack on the parser
CACHE_SIZE = 256


@dataclass(frozen=True)
class PackView:
    """What the upload path needs of a pack: its name, context columns and expectations."""

    name: str
    context_names: tuple[str, ...] = ()
    expectations: tuple[dict[str, Any], ...] = ()
    pack: Any = field(default=None, compare=False)


class _ParsedCache:
    """Packs parsed from YAML, by content hash (packs are immutable, so sharing is safe)."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self.items: OrderedDict[str, Any] = OrderedDict()
        self.lock = threading.Lock()

    def parse(self, text: str) -> Any:
        key = hashlib.sha256(text.encode()).hexdigest()
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        pack = parse_pack(text)
        with self.lock:
            self.items[key] = pack
            if len(self.items) > self.size:
                self.items.popitem(last=False)
        return pack


def check_yaml_shape(text: str) -> None:
    """Refuse aliases (expansion bombs) and nesting past ``MAX_YAML_DEPTH``, iteratively."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=fast_loader()):  # libyaml's events: same stream, 5x faster
            if isinstance(event, yaml.AliasEvent):
                raise InvalidRequest("Domain packs may not use YAML aliases (*name).", code="invalid_domain_pack")
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise InvalidRequest(f"The domain pack is nested deeper than {MAX_YAML_DEPTH} levels.",
                                         code="invalid_domain_pack", details={"max_depth": MAX_YAML_DEPTH})
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError:
        return  # the loader reports syntax errors with their position


def parse_pack(text: str) -> Any:
    check_yaml_shape(text)
    try:
        return load_pack_yaml(text)
    except PackError as exc:
        raise InvalidRequest(str(exc), code="invalid_domain_pack",
                             details={"faults": list(getattr(exc, "faults", ()))}) from None
    except RecursionError:
        raise InvalidRequest("The domain pack is nested too deeply.", code="invalid_domain_pack") from None


class PackRegistry:
    """Looks packs up by name: built-in first, then the custom packs in the database."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions
        self.cache = _ParsedCache()

    def names(self) -> list[str]:
        with self.sessions() as s:
            custom = list(s.scalars(select(DomainPackRow.name).where(DomainPackRow.retired_at.is_(None))
                                    .order_by(DomainPackRow.name)))
        return list(list_builtin()) + custom

    def _unknown(self, name: str) -> InvalidRequest:
        known = self.names()
        return InvalidRequest(f"Unknown domain {name!r}; known domains: {known}.", code="unknown_domain",
                              details={"domain": name, "known": known})

    def get(self, name: str, *, version: int | None = None) -> Any:
        """The pack ``name``: its current version, or ``version`` (kept even once retired)."""
        if is_builtin(name):  # a built-in's name or its alias ("medical" for "dermatology")
            return load_builtin(name)
        return self.cache.parse(self.get_text(name, version=version)[0])

    def get_text(self, name: str, *, version: int | None = None) -> tuple[str, int]:
        """``(yaml, version)`` of a custom pack."""
        row: DomainPackRow | DomainPackVersionRow | None
        with self.sessions() as s:
            if not storable_key(name):
                row = None
            elif version is None:
                row = s.get(DomainPackRow, name)
                row = None if row is None or row.retired_at is not None else row
            else:
                row = s.get(DomainPackVersionRow, (name, version))
        if row is None:
            raise self._unknown(name)
        return row.yaml, row.version

    def add(self, text: str, *, limits: PackLimits | None = None) -> Any:
        """Validate and store a custom pack (version 1, or the next after a retired one)."""
        pack = self._parse_custom(text, limits)
        with self.sessions.begin() as s:
            row = s.get(DomainPackRow, pack.name)
            if row is not None and row.retired_at is None:
                raise Conflict(f"A domain pack named {pack.name!r} already exists; PUT "
                               f"/v1/domains/{pack.name} stores a new version.", details={"domain": pack.name})
        self._store_version(pack.name, text, previous=row.version if row is not None else None)
        return pack

    def update(self, name: str, text: str, *, limits: PackLimits | None = None) -> tuple[Any, int]:
        """Store ``text`` as the next version of the custom pack ``name``."""
        pack = self._parse_custom(text, limits)
        if pack.name != name:
            raise InvalidRequest(f"The pack is named {pack.name!r}, not {name!r}.", code="invalid_domain_pack",
                                 details={"domain": name, "pack_name": pack.name})
        _, current = self._current(name)
        return pack, self._store_version(name, text, previous=current)

    def retire(self, name: str) -> None:
        """Retire a custom pack: no new audits can use it; audits that did keep their version."""
        self._current(name)
        with self.sessions.begin() as s:
            s.execute(update(DomainPackRow).where(DomainPackRow.name == name, DomainPackRow.retired_at.is_(None))
                      .values(retired_at=datetime.now(timezone.utc)))

    def _current(self, name: str) -> tuple[str, int]:
        if is_builtin(name):
            raise Conflict(f"{name!r} is a built-in domain and cannot be changed.", details={"domain": name})
        try:
            return self.get_text(name)
        except InvalidRequest as exc:
            raise NotFound(exc.message, code=exc.code, details=exc.details) from None

    def _parse_custom(self, text: str, limits: PackLimits | None = None) -> Any:
        check_pack_limits(text, limits or PackLimits())  # first: it stops reading at the first fault
        check_yaml_shape(text)
        pack = self.cache.parse(text)
        if is_builtin(pack.name):
            raise Conflict(f"{pack.name!r} is a built-in domain; choose another name.",
                           details={"domain": pack.name})
        return pack

    def _store_version(self, name: str, text: str, *, previous: int | None) -> int:
        """Insert version ``previous + 1``; compare-and-set on the current version (409 on a race)."""
        version, now = (previous or 0) + 1, datetime.now(timezone.utc)
        digest = hashlib.sha256(text.encode()).hexdigest()
        try:
            with self.sessions.begin() as s:
                s.add(DomainPackVersionRow(name=name, version=version, yaml=text, sha256=digest, created_at=now))
                if previous is None:
                    s.add(DomainPackRow(name=name, yaml=text, version=version, created_at=now))
                else:
                    swapped = s.execute(update(DomainPackRow).where(DomainPackRow.name == name,
                                                                    DomainPackRow.version == previous)
                                        .values(yaml=text, version=version, retired_at=None))
                    if rowcount(swapped) != 1:
                        raise IntegrityError("version moved", None, Exception())
        except IntegrityError:
            raise Conflict(f"Domain pack {name!r} was changed at the same time; retry.",
                           details={"domain": name}) from None
        return version


def resolve_pack(runtime: Any, name: str) -> PackView:
    """The pack called ``name`` (422 ``unknown_domain`` naming the known ones otherwise). The view
    keeps the name asked for: a dataset uploaded for ``medical`` is recorded as ``medical``, the
    name its client knows, and reads the dermatology pack it is an alias of."""
    return view(runtime.packs.get(name), name=name)


def view(pack: Any, *, name: str | None = None) -> PackView:
    return PackView(name=name or pack.name, context_names=tuple(c.name for c in pack.context),
                    expectations=tuple(_expectation_dict(e) for e in pack.all_expectations()), pack=pack)


def _expectation_dict(expectation: Any) -> dict[str, Any]:
    data = expectation.model_dump(mode="json")
    kwargs = {k: v for k, v in data.items() if k not in ("type", "column") and v is not None}
    if "value_set" in kwargs:
        kwargs["value_set"] = list(kwargs["value_set"])
    return {"type": data["type"], "column": data.get("column"), "kwargs": kwargs}
