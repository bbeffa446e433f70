"""reports/SCHEMA.md's field reference is generated from the AuditResult model: when a field is added
to the model and not to the page, users read a contract that is no longer the one served."""
from __future__ import annotations

import typing

from reports.result import SCHEMA_VERSION, AuditResult
from reports.schema_doc import MARKER, SCHEMA_MD, render_reference


def test_the_field_reference_in_schema_md_is_the_models():
    text = SCHEMA_MD.read_text(encoding="utf-8")
    assert MARKER in text, "run: python -m reports.schema_doc"
    assert text.split(MARKER, 1)[1].strip() == f"# Field reference\n\n{render_reference()}".strip(), \
        "reports/SCHEMA.md is out of date: run python -m reports.schema_doc"


def test_every_model_the_result_refers_to_has_a_table():
    reference = render_reference()
    seen, queue = set(), [AuditResult]
    while queue:
        model = queue.pop()
        if model in seen:
            continue
        seen.add(model)
        assert f"## {model.__name__}\n" in reference
        for info in model.model_fields.values():
            stack = [info.annotation]
            while stack:
                t = stack.pop()
                if isinstance(t, type) and hasattr(t, "model_fields"):
                    queue.append(t)
                stack += list(typing.get_args(t))
    assert len(seen) > 10


def test_results_carry_the_schema_version():
    fields = AuditResult.model_fields
    assert fields["schema_version"].default == SCHEMA_VERSION and not fields["schema_version"].is_required()
    major, minor = SCHEMA_VERSION.split(".")
    assert major.isdigit() and minor.isdigit()
