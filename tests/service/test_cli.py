"""The console script starts fast and never imports Evidently or Great Expectations up front."""
from __future__ import annotations

import subprocess
import sys
import time


def test_help_is_fast():
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "service.cli", "--help"], capture_output=True, text=True,
                         check=True)
    assert time.perf_counter() - started < 1.0
    assert "serve" in out.stdout


def test_app_and_cli_import_no_heavy_libraries():
    code = ("import sys, service.cli, service.app; app = service.app.create_app; "
            "heavy = [m for m in ('evidently', 'great_expectations', 'matplotlib', 'sklearn') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
