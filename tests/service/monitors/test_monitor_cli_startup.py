"""A cron run with nothing new answers at about the interpreter's start-up: it loads neither the
scientific stack nor the validation and report libraries, and its exit code still says whether
alerts are open. All data SYNTHETIC."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.service.monitor_support import synthetic_frame

ROOT = Path(__file__).resolve().parents[3]
NOT_LOADED = ("evidently", "great_expectations", "sklearn", "scipy", "pandas", "sqlalchemy")
PROBE = """
import sys
from service.cli import main
code = main(sys.argv[1:])
print("LOADED", [m for m in {names!r} if m in sys.modules])
sys.exit(code)
"""


def _cron(config: Path, *extra: str) -> tuple[int, list[str], str]:
    env = {**os.environ, "DO_NOT_TRACK": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE.format(names=NOT_LOADED), "monitor", "run", "--config",
                           str(config), *extra], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    line = next(x for x in done.stdout.splitlines() if x.startswith("LOADED"))
    return done.returncode, ast.literal_eval(line[len("LOADED "):]), done.stdout


def test_a_run_with_no_new_data_loads_no_heavy_library(tmp_path):
    (tmp_path / "drop").mkdir()
    synthetic_frame(300, 0).to_csv(tmp_path / "bench.csv", index=False)
    config = tmp_path / "monitor.yaml"
    config.write_text(yaml.safe_dump({"name": "cron", "benchmark": "bench.csv", "state": "state.json",
                                      "source": {"type": "directory", "path": "drop"}}))
    code, loaded, out = _cron(config)
    assert code == 0 and "no new data" in out
    assert loaded == [], f"a run with nothing new imported {loaded}"
    # an alert left open by an earlier run: the gate still fails, still without the heavy libraries
    state = {"taken": [], "watermark": None, "n_tested": 1, "detector_state": {}, "runs": [],
             "alerts": [{"id": "al_1", "monitor_id": "cron", "key": "covariate:x1", "kind": "covariate_shift",
                         "severity": "medium", "statement": "x1 moved", "state": "open", "opened_run_id": "run_1",
                         "last_seen_run_id": "run_1", "missed_runs": 0}]}
    (tmp_path / "state.json").write_text(json.dumps(state))
    code, loaded, out = _cron(config, "--fail-on-shift")
    assert code == 1 and "1 open alert" in out and loaded == []
    assert _cron(config)[0] == 0  # without the gate the run itself succeeded
