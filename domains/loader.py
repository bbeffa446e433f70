"""Load domain packs from YAML text or from the built-in packs shipped in ``domains/packs``.

Errors name the fault: a YAML syntax error gives its line and column; a schema error gives
the field path (``slices[3].expression``) and, for slices, the slice name and a caret under
the expression position.

>>> pack = load_builtin("dermatology")
>>> pack.primary_metric, pack.positive_class, len(pack.slices) >= 8
('sensitivity', 'malignant', True)
>>> list_builtin()
('deepfake', 'dermatology', 'facial_expression', 'generic')
>>> load_builtin("medical") is pack, builtin_name("medical"), aliases_of("dermatology")
(True, 'dermatology', ('medical',))
>>> load_pack_yaml("name: x")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
domains.loader.PackError: invalid domain pack 'x':
  title: Field required
...
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml
from pydantic import ValidationError

from domains.packs import DomainPack

__all__ = ["PackError", "load_pack_yaml", "load_pack_dict", "load_builtin", "list_builtin", "BUILTIN_ALIASES",
           "builtin_name", "is_builtin", "aliases_of"]

# Older names of built-in packs, still accepted wherever a domain name is (REST, CLI, Python,
# stored audits, series and monitors): the dermatology pack was called "medical", a name that
# promised more than skin lesions.
BUILTIN_ALIASES = {"medical": "dermatology"}


class PackError(ValueError):
    """A domain pack that cannot be loaded; the message names every fault found."""

    def __init__(self, message: str, faults: tuple[str, ...] = ()):
        self.faults = faults
        super().__init__(message)


def _field_path(loc: tuple, data) -> str:
    """``('slices', 3, 'expression')`` -> ``slices[3] (dark_skin).expression``."""
    out, node = "", data
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            try:
                node = node[part]
                if isinstance(node, dict) and "name" in node:
                    out += f" ({node['name']})"
            except (IndexError, KeyError, TypeError):
                node = None
        elif str(part).startswith(("expect_column", "function-")):
            continue  # discriminator tags and validator names say nothing to a user
        else:
            out += ("." if out else "") + str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return out or "(pack)"


def _faults(err: ValidationError, data) -> tuple[str, ...]:
    faults = []
    for e in err.errors():
        message = e["msg"].removeprefix("Value error, ")
        if isinstance(e.get("input"), bool) and "string" in message:
            message += " (YAML reads unquoted yes/no/on/off/true/false as booleans: quote the value)"
        # whole-pack checks already name their field path (e.g. slices[2] (name).expression)
        faults.append(message if not e["loc"] else f"{_field_path(e['loc'], data)}: {message}")
    return tuple(faults)


def load_pack_dict(data: dict) -> DomainPack:
    """Validate an already-parsed mapping into a :class:`DomainPack`."""
    if not isinstance(data, dict):
        raise PackError(f"a domain pack must be a YAML mapping, got {type(data).__name__}")
    try:
        return DomainPack.model_validate(data)
    except ValidationError as err:
        faults = _faults(err, data)
        name = data.get("name", "?")
        body = "\n".join("  " + line for f in faults for line in f.splitlines())
        raise PackError(f"invalid domain pack {name!r}:\n{body}", faults) from None


def load_pack_yaml(text: str) -> DomainPack:
    """Parse and validate a YAML domain pack. Raises :class:`PackError` naming the fault."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise PackError(f"invalid YAML{where}: {problem}") from None
    return load_pack_dict(data)


def list_builtin() -> tuple[str, ...]:
    """Names of the packs shipped with contextshift, sorted (aliases not included)."""
    folder = resources.files("domains") / "packs"
    return tuple(sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml")))


def builtin_name(name: str) -> str:
    """The built-in pack's own name for ``name`` (an alias resolved; any other name unchanged)."""
    return BUILTIN_ALIASES.get(name, name)


def is_builtin(name: str) -> bool:
    """``name`` is a built-in pack or an alias of one."""
    return builtin_name(name) in list_builtin()


def aliases_of(name: str) -> tuple[str, ...]:
    """The other names the built-in pack ``name`` is accepted under."""
    return tuple(sorted(alias for alias, target in BUILTIN_ALIASES.items() if target == name))


def load_builtin(name: str) -> DomainPack:
    """The built-in pack ``name`` or an alias of it (cached; packs are immutable so sharing is safe)."""
    if not is_builtin(name):
        raise PackError(f"unknown domain {name!r}; built-in domains are {list(list_builtin())}")
    return _load_builtin(builtin_name(name))


@lru_cache(maxsize=None)
def _load_builtin(name: str) -> DomainPack:
    text = (resources.files("domains") / "packs" / f"{name}.yaml").read_text(encoding="utf-8")
    return load_pack_yaml(text)
