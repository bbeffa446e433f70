"""The layering of the packages, checked on the real import graph.

``service`` may use ``audit`` (the claim layer); ``audit`` may use ``reports``; ``reports`` may use
``detectors`` and ``domains``; those use only
``slicelang`` (the writer of slice-expression text), which uses nothing of ours; and no module imports
itself back through a cycle.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("service", "audit", "reports", "detectors", "domains", "imagecontext", "slicelang")


def test_layers_contract_holds():
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.skip("import-linter is not installed in this environment (make test installs it)")
    done = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_has_no_cycles():
    """Cycles hid behind imports inside functions (``ingest`` <-> ``ingest_formats`` and four more pairs);
    the graph counts those imports too, so a cycle cannot come back that way."""
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (make test installs it)")
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    edges = {m: {w for w in graph.find_modules_directly_imported_by(m) if w in graph.modules} for m in graph.modules}
    assert _cycles(edges) == []
    assert _cycles({"a": {"b"}, "b": {"a", "c"}, "c": set()}) == [["a", "b"]]  # the check itself finds one
