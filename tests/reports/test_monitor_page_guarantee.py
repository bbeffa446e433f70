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
