"""The monitor's trend page says what its false-alarm guarantee is and, beside it, how fast the
detectors were measured to catch changes, citing the benchmark that measured it."""
from __future__ import annotations

import html
import re
from types import SimpleNamespace

from reports.monitor_html import render_monitor_html
from service.monitors.budget import HORIZON, budget_summary


def _page(alpha: float) -> str:
    monitor = SimpleNamespace(id="mo_1", name="m", benchmark_id="ds_1", domain="generic",
                              schedule={"cron": "0 * * * *"}, source={"type": "directory"})
    return html.unescape(render_monitor_html(monitor, [], [], budget_summary(alpha, 0)))


def test_the_guarantee_and_the_measured_delays_stand_together():
    for alpha in (0.05, 0.01):
        page = _page(alpha)
        budget = budget_summary(alpha, 0)
        guarantee = page.index(budget["guarantee"])
        assert f"{HORIZON / alpha:,.0f} runs" in page  # the guarantee in runs at this monitor's α
        measured = page.index(budget["measured"])
        # the measured delays follow the guarantee, before the explanation of how the budget is shared
        assert guarantee < measured < page.index("How: ")
        assert "</p>\n<p>" in page[guarantee:measured]


def test_the_measured_delays_cite_the_benchmark_and_say_how_fast():
    measured = budget_summary(0.05, 0)["measured"]
    assert "benchmarks/RESULTS.md" in measured and "benchmarks/claims_calibration/over_time.py" in measured
    assert "SYNTHETIC" in measured
    shares = [int(p) for p in re.findall(r"(\d+) %", measured)]
    assert shares and all(0 <= p <= 100 for p in shares)
    assert re.search(r"within \d+ runs", measured) and "unchanged monitors" in measured


def test_the_runs_table_lists_only_slices_worse_than_overall_and_says_so_in_words():
    """A signed gap listed a slice 0.244 better than overall among the 'worst slices' as (-0.244)."""
    run = SimpleNamespace(id="run_1", status="succeeded", started_at=None, created_at=None, n_rows=500, audit_id=None,
                          alpha=0.00024, verdict={"severity": "none", "summary": "No change."}, error=None,
                          summary={"worst_slices": [{"name": "adult_staff", "gap": 0.018},
                                                    {"name": "emergency_department", "gap": -0.244}]})
    monitor = SimpleNamespace(id="mo_1", name="m", benchmark_id="ds_1", domain="generic",
                              schedule={"cron": "0 * * * *"}, source={"type": "directory"})
    page = html.unescape(render_monitor_html(monitor, [run], [], budget_summary(0.05, 1)))
    assert "adult_staff (0.018 below overall)" in page and "emergency_department" not in page
    better = SimpleNamespace(**{**vars(run), "summary": {"worst_slices": [{"name": "b", "gap": -0.1}]}})
    assert "none below overall" in html.unescape(render_monitor_html(monitor, [better], [], budget_summary(0.05, 1)))
