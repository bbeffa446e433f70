"""The monitor's trend page shows what is unsafe about its source and what each run left out."""
from __future__ import annotations

from datetime import datetime, timezone
from types import SimpleNamespace

from reports.monitor_html import render_monitor_html


def test_page_shows_source_warnings_and_run_notes():
    """A superuser warning reached the JSON only, and a run's skipped files were nowhere on the page."""
    at = datetime.now(timezone.utc)
    monitor = SimpleNamespace(id="mo_1", name="m", benchmark_id="ds_1", domain="generic", schedule={"cron": "0 * * * *"},
                              source={"type": "sql", "warnings": ["the database user <b>app</b> is a superuser"]})
    run = SimpleNamespace(id="run_1", status="no_new_data", started_at=at, created_at=at, n_rows=0, audit_id=None,
                          alpha=None, verdict=None, error=None, summary={"notes": ["skipped caf\\xe9.csv: name is not UTF-8"]})
    budget = {"alpha": 0.05, "spent": 0.0, "runs_tested": 0, "next_run_alpha": 0.00048, "method": "fixed level"}
    page = render_monitor_html(monitor, [run], [], budget)
    assert "The source is unsafe" in page and "&lt;b&gt;app&lt;/b&gt; is a superuser" in page
    assert "name is not UTF-8" in page
    assert "any 52 consecutive runs" in page
