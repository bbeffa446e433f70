"""contextshift monitor run: by id on the configured database, and --config without a server.
All data SYNTHETIC."""
from __future__ import annotations

import json
import re

import pytest
import yaml
from fastapi.testclient import TestClient

from service.app import create_app
from service.cli import main
from service.settings import Settings, get_settings
from tests.service.monitor_support import cron_environment, directory_monitor, synthetic_frame, upload_benchmark


@pytest.mark.slow
def test_monitor_run_by_config_keeps_state_between_runs(tmp_path, capsys):
    drop = tmp_path / "drop"
    drop.mkdir()
    synthetic_frame(1000, 0).to_csv(tmp_path / "bench.csv", index=False)
    config = {"name": "cron-monitor", "benchmark": "bench.csv", "domain": "generic",
              "source": {"type": "directory", "path": "drop", "pattern": "*.csv"},
              # the model ignores x1 (labels do not depend on it), so the measured loss of its shift is ~0 and the
              # claim is a low-severity change: it alerts at min_severity "low"
              "options": {"alpha": 0.05, "discovery": False}, "alerts": {"min_severity": "low"},
              "state": "state.json", "out": "reports"}
    (tmp_path / "monitor.yaml").write_text(yaml.safe_dump(config))
    cfg = str(tmp_path / "monitor.yaml")
    assert main(["monitor", "run", "--config", cfg]) == 0
    assert "no new data" in capsys.readouterr().out
    synthetic_frame(300, 1).to_csv(drop / "a.csv", index=False)
    assert main(["monitor", "run", "--config", cfg, "--fail-on-shift"]) == 0
    synthetic_frame(300, 2, shift=1.0).to_csv(drop / "b.csv", index=False)
    assert main(["monitor", "run", "--config", cfg, "--fail-on-shift"]) == 1
    assert main(["monitor", "run", "--config", cfg]) == 0  # nothing new: no second audit
    # ...but the alert it opened is still open: a gate that exited 0 here let a cron job pass while alerts were open
    assert main(["monitor", "run", "--config", cfg, "--fail-on-shift"]) == 1
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["n_tested"] == 2 and len(state["taken"]) == 2
    assert [r["alpha"] for r in state["runs"]] == sorted((r["alpha"] for r in state["runs"]), reverse=True)
    assert [a["kind"] for a in state["alerts"] if a["state"] == "open"] == ["covariate_shift"]
    assert len(list((tmp_path / "reports").glob("*.html"))) == 2


def test_monitor_run_bad_input_exits_2(tmp_path, capsys):
    (tmp_path / "monitor.yaml").write_text("benchmark: missing.csv\n")
    assert main(["monitor", "run", "--config", str(tmp_path / "monitor.yaml")]) == 2
    assert "invalid_config" in capsys.readouterr().err
    assert main(["monitor", "run"]) == 2


@pytest.mark.slow
def test_monitor_run_by_id_on_the_configured_database(tmp_path, monkeypatch, capsys):
    drop = tmp_path / "drop"
    drop.mkdir()
    cron_environment(monkeypatch, tmp_path / "data", drop)
    try:
        with TestClient(create_app(Settings())) as client:
            bench = upload_benchmark(client, synthetic_frame(600, 0))
            monitor = directory_monitor(client, bench, drop, "cron", options={"discovery": False})
        synthetic_frame(200, 3).to_csv(drop / "a.csv", index=False)
        assert main(["monitor", "run", monitor]) == 0
        assert "open alert" in capsys.readouterr().out
        assert main(["monitor", "run", monitor]) == 0
        assert "no new data" in capsys.readouterr().out
        assert main(["monitor", "run", "mo_missing"]) == 2
        with TestClient(create_app(Settings())) as client:
            runs = client.get(f"/v1/monitors/{monitor}/runs").json()["items"]
        assert [(r["trigger"], r["status"]) for r in runs] == [("cli", "no_new_data"), ("cli", "succeeded")]
    finally:
        get_settings.cache_clear()


@pytest.mark.slow
def test_a_cron_run_with_no_new_data_does_not_read_the_benchmark(tmp_path, capsys):
    """A run with no new data cost ~24 s: it read and fitted the benchmark before looking at the source."""
    import time

    (tmp_path / "drop").mkdir()
    synthetic_frame(200_000, 0).to_csv(tmp_path / "bench.csv", index=False)
    config = {"name": "cron", "benchmark": "bench.csv", "source": {"type": "directory", "path": "drop"},
              "state": "state.json"}
    (tmp_path / "monitor.yaml").write_text(yaml.safe_dump(config))
    started = time.perf_counter()
    assert main(["monitor", "run", "--config", str(tmp_path / "monitor.yaml")]) == 0
    took = time.perf_counter() - started
    assert "no new data" in capsys.readouterr().out
    assert took < 0.5, f"a run with nothing new took {took:.2f} s"


def test_monitor_run_by_id_without_monitor_roots_names_the_setting_and_stores_no_run(tmp_path, monkeypatch, capsys):
    """It printed a traceback, exited 2, stored a failed run and blamed the monitor's folder."""
    drop = tmp_path / "drop"
    drop.mkdir()
    cron_environment(monkeypatch, tmp_path / "data", drop)
    try:
        with TestClient(create_app(Settings())) as client:
            bench = upload_benchmark(client, synthetic_frame(300, 0))
            monitor = directory_monitor(client, bench, drop, "cron")
        synthetic_frame(100, 3).to_csv(drop / "a.csv", index=False)
        monkeypatch.delenv("CONTEXTSHIFT_MONITOR_ROOTS")  # the cron job's shell lacks it
        get_settings.cache_clear()
        capsys.readouterr()
        assert main(["monitor", "run", monitor]) == 2
        out = capsys.readouterr()
        lines = [line for line in out.err.splitlines() if line.strip()]
        assert len(lines) == 1 and "CONTEXTSHIFT_MONITOR_ROOTS" in lines[0] and "Traceback" not in out.err
        assert str(drop) not in lines[0]  # the folder is not at fault
        monkeypatch.setenv("CONTEXTSHIFT_MONITOR_ROOTS", str(drop))
        get_settings.cache_clear()
        with TestClient(create_app(Settings())) as client:
            assert client.get(f"/v1/monitors/{monitor}/runs").json()["items"] == []
    finally:
        get_settings.cache_clear()


@pytest.mark.slow
def test_monitor_run_by_config_writes_the_trend_page_numbered_as_its_charts(tmp_path, capsys):
    """Cron mode had no trend page; the service's page numbered runs 1-3 in charts but 1-6 in the table."""
    drop = tmp_path / "drop"
    drop.mkdir()
    synthetic_frame(800, 0).to_csv(tmp_path / "bench.csv", index=False)
    config = {"name": "cron-page", "benchmark": "bench.csv", "source": {"type": "directory", "path": "drop"},
              "options": {"discovery": False}, "state": "state.json"}
    (tmp_path / "monitor.yaml").write_text(yaml.safe_dump(config))
    cfg = str(tmp_path / "monitor.yaml")
    assert main(["monitor", "run", "--config", cfg]) == 0  # no new data: no page (a quiet cron run stays cheap)
    assert not (tmp_path / "trend.html").exists()
    for i in range(3):
        synthetic_frame(200, i + 1).to_csv(drop / f"b{i}.csv", index=False)
        assert main(["monitor", "run", "--config", cfg]) == 0
        assert main(["monitor", "run", "--config", cfg]) == 0  # a no-data run between tested ones
    assert "trend page:" in capsys.readouterr().out
    page = (tmp_path / "trend.html").read_text()
    assert "cron-page" in page and "at least 52/α runs before its first false alert" in page
    numbers = [int(n) for n in re.findall(r"<tr><td>(\d+)</td><td><code>run_", page)]
    assert numbers == [1, 2, 3]
    spent = float(re.search(r"used <strong>([0-9.]+)</strong>", page).group(1))
    assert abs(spent - 3 * 0.05 / 4 / 52) < 5e-5  # three runs' levels, not the harm share added up front
