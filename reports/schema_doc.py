"""The AuditResult's field reference, generated from the pydantic model so that it cannot drift.

``python -m reports.schema_doc`` rewrites the generated part of ``reports/SCHEMA.md`` (everything
after :data:`MARKER`); ``tests/reports/test_schema_doc.py`` fails when the file is out of date.

>>> text = render_reference()
>>> "## AuditResult" in text and "| `schema_version` |" in text
True
"""
from __future__ import annotations

import sys
import typing
from pathlib import Path

from pydantic import BaseModel

from reports.result import AuditResult

__all__ = ["MARKER", "render_reference", "write_schema_md"]

MARKER = ("<!-- generated from the models in reports/result/ by `python -m reports.schema_doc`: "
          "edit the model, not below -->")
SCHEMA_MD = Path(__file__).with_name("SCHEMA.md")


def _type_name(annotation: typing.Any) -> tuple[str, list[type[BaseModel]]]:
    """A readable type and the models it refers to (documented after the one that uses them)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})", [annotation]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f'`"{a}"`' if isinstance(a, str) else f"`{a}`" for a in args), []
    if origin is typing.Union:
        parts = [_type_name(a) for a in args if a is not type(None)]
        text = " or ".join(p[0] for p in parts) + (" or null" if type(None) in args else "")
        return text, [m for p in parts for m in p[1]]
    if origin in (list, tuple, dict):
        inner, models = _type_name(args[-1]) if args else ("any", [])
        inner = f"({inner})" if " or " in inner else inner
        return (f"list of {inner}" if origin is not dict else f"object of {inner}"), models
    if annotation is typing.Any:
        return "any", []
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation))), []


def _table(model: type[BaseModel]) -> tuple[str, list[type[BaseModel]]]:
    doc = (model.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    open_record = model.model_config.get("extra") == "allow"
    lines = [f"## {model.__name__}", ""]
    if doc and not doc.startswith(("A base class", "Usage docs")):
        lines += [doc, ""]
    if open_record:
        lines += ["Open record: newer detectors may add fields.", ""]
    lines += ["| field | type | required | description |", "|---|---|---|---|"]
    found: list[type[BaseModel]] = []
    for name, info in model.model_fields.items():
        text, models = _type_name(info.annotation)
        found += models
        description = (info.description or "").replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{name}` | {text} | {'yes' if info.is_required() else 'no'} | {description} |")
    return "\n".join(lines) + "\n", found


def render_reference(root: type[BaseModel] = AuditResult) -> str:
    """Markdown tables of ``root`` and every model it refers to, breadth first, each once."""
    out, queue, seen = [], [root], set()
    while queue:
        model = queue.pop(0)
        if model in seen:
            continue
        seen.add(model)
        table, found = _table(model)
        out.append(table)
        queue += [m for m in found if m not in seen]
    return "\n".join(out)


def write_schema_md(path: Path = SCHEMA_MD) -> bool:
    """Rewrite the generated part of ``path``; True when it changed."""
    text = path.read_text(encoding="utf-8")
    head = text.split(MARKER)[0].rstrip("\n")
    new = f"{head}\n\n{MARKER}\n\n# Field reference\n\n{render_reference()}"
    if new == text:
        return False
    path.write_text(new, encoding="utf-8")
    return True


if __name__ == "__main__":
    changed = write_schema_md()
    print(f"{SCHEMA_MD} {'rewritten' if changed else 'up to date'}")
    sys.exit(0)
