"""Domain packs as data, the slice-expression language and synthetic example data.

Imports nothing else of ours.
"""
from domains.examples import EXAMPLE_DOMAINS, PLANTED, PlantedShift, make_example
from domains.expressions import ExpressionError, check, columns_used, evaluate, parse, to_text, validate
from domains.loader import (
                            BUILTIN_ALIASES,
                            PackError,
                            aliases_of,
                            builtin_name,
                            is_builtin,
                            list_builtin,
                            load_builtin,
                            load_pack_dict,
                            load_pack_yaml,
)
from domains.packs import KNOWN_METRICS, ContextColumn, DomainPack, ExpertSlice

__all__ = [
    "DomainPack",
    "ContextColumn",
    "ExpertSlice",
    "KNOWN_METRICS",
    "PackError",
    "load_pack_yaml",
    "load_pack_dict",
    "load_builtin",
    "list_builtin",
    "is_builtin",
    "builtin_name",
    "aliases_of",
    "BUILTIN_ALIASES",
    "ExpressionError",
    "parse",
    "validate",
    "check",
    "evaluate",
    "columns_used",
    "to_text",
    "make_example",
    "PlantedShift",
    "PLANTED",
    "EXAMPLE_DOMAINS",
]
