"""The layering of the packages, checked on the real import graph.

``service`` may use ``reports``; ``reports`` may use ``detectors`` and ``domains``; those two use
nothing of ours, and no module imports itself back through a cycle.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("service", "reports", "detectors", "domains")


def test_layers_contract_holds():
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.skip("import-linter is not installed in this environment (make test installs it)")
    done = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
