"""imagecontext imports nothing else of the project: it is pure functions of the image."""
from __future__ import annotations

import ast
from pathlib import Path

OURS = {"service", "reports", "detectors", "domains", "tests", "benchmarks"}


def test_imports_nothing_of_ours():
    folder = Path(__file__).resolve().parents[2] / "imagecontext"
    found = []
    for file in folder.glob("*.py"):
        for node in ast.walk(ast.parse(file.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [(file.name, n) for n in names if n.split(".")[0] in OURS]
    assert found == []
