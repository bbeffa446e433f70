"""The example audit renders to the same bytes as the committed pages: a refactor of the library or the
renderers that changes a report's text, even by a space, fails here with the first lines that differ.

A change that is meant to show in the reports regenerates the pages and commits them beside it:
``UPDATE_GOLDEN=1 python -m pytest tests/reports/test_golden_rendering.py`` (then read the diff)."""
from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from reports import render_html, render_markdown
from reports.result import as_result
from tests.reports.conftest import load_example

GOLDEN = Path(__file__).parent / "golden"
RENDERERS = {"audit_example.html": render_html, "audit_example.md": render_markdown}


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_the_example_audit_renders_to_the_committed_page(name):
    page = RENDERERS[name](as_result(load_example()))
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(page, encoding="utf-8")
    golden = path.read_text(encoding="utf-8")
    if page != golden:
        diff = difflib.unified_diff(golden.splitlines(), page.splitlines(), "committed", "rendered", lineterm="", n=1)
        pytest.fail(f"{name} differs from {path} (UPDATE_GOLDEN=1 rewrites it):\n" + "\n".join(list(diff)[:40]))
