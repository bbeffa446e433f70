"""The monitor's trend page shows what is unsafe about its source and what each run left out."""
from __future__ import annotations

from datetime import datetime, timezone
from types import SimpleNamespace

from reports.monitor_html import render_monitor_html


def test_page_shows_source_warnings_and_run_notes():
    """A superuser warning reached the JSON only, and a run's skipped files were nowhere on the page."""
    at = datetime.now(timezone.utc)
    monitor = SimpleNamespace(id="mo_1", name="m", benchmark_id="ds_1", domain="generic",
                              schedule={"cron": "0 * * * *"},
                              source={"type": "sql", "warnings": ["the database user <b>app</b> is a superuser"]})
    run = SimpleNamespace(id="run_1", status="no_new_data", started_at=at, created_at=at, n_rows=0, audit_id=None,
                          alpha=None, verdict=None, error=None,
                          summary={"notes": ["skipped caf\\xe9.csv: name is not UTF-8"]})
    budget = {"alpha": 0.05, "spent": 0.0, "runs_tested": 0, "next_run_alpha": 0.00048, "method": "fixed level"}
    page = render_monitor_html(monitor, [run], [], budget)
    assert "The source is unsafe" in page and "&lt;b&gt;app&lt;/b&gt; is a superuser" in page
    assert "name is not UTF-8" in page
    assert "at least 52/α runs before its first false alert" in page


def test_table_and_charts_number_the_tested_runs_alike():
    """Charts numbered runs 1-3 (tested) while the table numbered 1-6 (every run)."""
    import re

    at = datetime.now(timezone.utc)
    monitor = SimpleNamespace(id="mo_1", name="m", benchmark_id="ds_1", domain="generic",
                              schedule={"cron": "0 * * * *"}, source={"type": "directory"})

    def run(i, status):
        tested = status == "succeeded"
        return SimpleNamespace(id=f"run_{i}", status=status, started_at=at, created_at=at, n_rows=10 if tested else 0,
                               audit_id=None, alpha=0.00024 if tested else None, verdict={"severity": "none"},
                               error=None, summary={"severity": "none", "drift": [
                                   {"evidence": 10.0 ** i, "threshold": 1e6}]} if tested else None)

    runs = [run(i, s) for i, s in enumerate(["succeeded", "no_new_data", "succeeded", "failed", "no_new_data",
                                             "succeeded"])]
    budget = {"alpha": 0.05, "spent": 0.00072, "runs_tested": 3, "next_run_alpha": 0.00024, "method": "shared"}
    page = render_monitor_html(monitor, runs, [], budget)
    assert [int(n) for n in re.findall(r"<tr><td>(\d+)</td><td><code>run_", page)] == [1, 2, 3]
    assert page.count("<tr><td></td><td><code>run_") == 3
    assert "evidence per run, as a share of the way to their thresholds" in page
