"""Resolving domain packs by name for the service (built-in packs from ``domains``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from service.errors import InvalidRequest


@dataclass(frozen=True)
class PackView:
    """What the service needs of a pack: its name, context columns and expectations."""

    name: str
    context_names: tuple[str, ...] = ()
    expectations: tuple[dict[str, Any], ...] = ()
    pack: Any = field(default=None, compare=False)


def resolve_pack(runtime: Any, name: str) -> PackView:
    """Return the pack called ``name`` or raise a 422 naming the known packs."""
    from domains import list_builtin, load_builtin  # imported late: packs parse YAML on load

    known = list(list_builtin())
    if name not in known:
        raise InvalidRequest(f"Unknown domain {name!r}; known domains: {known}.", code="unknown_domain",
                             details={"domain": name, "known": known})
    pack = load_builtin(name)
    return view(pack)


def view(pack: Any) -> PackView:
    contexts = tuple(c.name for c in pack.contexts)
    expectations = tuple(pack_expectations(pack))
    return PackView(name=pack.name, context_names=contexts, expectations=expectations, pack=pack)


def pack_expectations(pack: Any) -> list[dict[str, Any]]:
    """Placeholder adapter, replaced once the pack model is final."""
    return list(getattr(pack, "expectations", ()) or ())
