"""Limits on what a posted domain pack may ask of every audit: its number of slices, and the size
of each slice expression (characters, then terms).

An audit evaluates and tests every slice of its pack, so a pack of 3,001 slices or a
4,000-term expression turns a two-second audit into minutes. The limits are checked when a
pack is posted or put, on a fast read of the YAML (libyaml when present), before the pack is
parsed and validated in full: an oversized pack is refused in well under a second.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from domains import expressions as ex
from service.errors import InvalidRequest, UploadTooLarge


@dataclass(frozen=True)
class PackLimits:
    """``max_slices`` per pack; ``max_terms`` and ``max_chars`` per slice expression."""

    max_slices: int = 500
    max_terms: int = 200
    max_chars: int = 4000

    @classmethod
    def from_settings(cls, settings: Any) -> "PackLimits":
        return cls(max_slices=settings.max_pack_slices, max_terms=settings.max_expression_terms,
                   max_chars=settings.max_expression_chars)


def fast_loader() -> Any:
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _too_complex(message: str, setting: str, maximum: int, found: int, where: str) -> InvalidRequest:
    return InvalidRequest(message, code="expression_too_complex",
                          details={"limit": setting, "maximum": maximum, "found": found, "where": where})


def _nodes(text: str):
    """``(path, event)`` of every node start of the YAML stream, e.g. ``(("slices", 3, "expression"), scalar)``.

    Read from parser events (libyaml when present), so nothing is built and a caller can stop
    early; aliases are not expanded (they are refused later by ``check_yaml_shape``).
    """
    stack: list[list] = []  # [path, is_mapping, waiting_for_key, key_or_index]

    def child_path() -> tuple:
        if not stack:
            return ()
        path, is_mapping, waiting, key = stack[-1]
        return path + ((None if waiting else key),) if is_mapping else path + (key,)

    def done() -> None:  # a node of the innermost container ended
        if stack:
            top = stack[-1]
            if top[1]:
                top[2] = not top[2]
            else:
                top[3] += 1

    for event in yaml.parse(text, Loader=fast_loader()):
        if isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            if stack and stack[-1][1] and stack[-1][2]:  # a mapping key
                stack[-1][3] = getattr(event, "value", None)
            else:
                yield child_path(), event
            done()
        elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            path = child_path()
            yield path, event
            stack.append([path, isinstance(event, yaml.MappingStartEvent), True, None if
                          isinstance(event, yaml.MappingStartEvent) else 0])
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            stack.pop()
            done()


def check_pack_limits(text: str, limits: PackLimits) -> None:
    """Raise 413 ``too_many_slices`` or 422 ``expression_too_complex`` naming the limit; other
    faults are left to the full parse, which reports them with their place."""
    n_slices = 0
    try:
        for path, event in _nodes(text):
            if len(path) == 2 and path[0] == "slices" and isinstance(event, yaml.MappingStartEvent):
                n_slices += 1
                if n_slices > limits.max_slices:
                    _too_many_slices(limits)  # stop reading here: the rest may be huge
            elif path[:1] == ("slices",) and path[2:] == ("expression",) and isinstance(event, yaml.ScalarEvent):
                _check_expression(event.value, f"slices[{path[1]}].expression", limits)
    except yaml.YAMLError:
        return


def _too_many_slices(limits: PackLimits) -> None:
    raise UploadTooLarge(f"The domain pack has more than {limits.max_slices} slices, the most accepted "
                         "(CONTEXTSHIFT_MAX_PACK_SLICES): every audit tests every slice.", code="too_many_slices",
                         details={"limit": "CONTEXTSHIFT_MAX_PACK_SLICES", "maximum": limits.max_slices})


def _check_expression(expression: str, where: str, limits: PackLimits) -> None:
    if len(expression) > limits.max_chars:
        raise _too_complex(f"{where} has {len(expression)} characters; at most {limits.max_chars} are accepted "
                           "(CONTEXTSHIFT_MAX_EXPRESSION_CHARS).", "CONTEXTSHIFT_MAX_EXPRESSION_CHARS",
                           limits.max_chars, len(expression), where)
    try:
        terms = ex.count_terms(ex.parse(expression))
    except ex.ExpressionError:
        return  # reported with its position by the full parse
    if terms > limits.max_terms:
        raise _too_complex(f"{where} combines {terms} terms; at most {limits.max_terms} are accepted "
                           "(CONTEXTSHIFT_MAX_EXPRESSION_TERMS).", "CONTEXTSHIFT_MAX_EXPRESSION_TERMS",
                           limits.max_terms, terms, where)
