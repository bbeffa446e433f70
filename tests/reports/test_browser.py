"""The report in a real headless Chromium: it loads with no console error, requests nothing but
the file itself, and renders; a screenshot is kept in test-artifacts/report.png (gitignored)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from reports import plan_next_round, rank_limitations, render_html

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"chromium not installed: {CHROMIUM} is missing (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (test extra)")
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield instance
        instance.close()


def _open(browser, html: str, path: Path):
    path.write_text(html, encoding="utf-8")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    console, requests, failures = [], [], []
    page.on("console", lambda m: console.append((m.type, m.text)))
    page.on("dialog", lambda d: (console.append(("dialog", d.message)), d.dismiss()))
    page.on("pageerror", lambda e: console.append(("pageerror", str(e))))
    page.on("request", lambda r: requests.append(r.url))
    page.on("requestfailed", lambda r: failures.append(r.url))
    page.goto(path.as_uri(), wait_until="load")
    return page, console, requests, failures


def _report(audit, budget=300):
    limitations = rank_limitations(audit)
    return render_html(audit, limitations, plan_next_round(audit, limitations, budget=budget, min_slice_size=30))


def test_report_loads_offline_without_errors(browser, audit, tmp_path):
    path = tmp_path / "report.html"
    page, console, requests, failures = _open(browser, _report(audit), path)
    try:
        assert [c for c in console if c[0] in ("error", "pageerror", "warning")] == []
        assert requests == [path.as_uri()] and failures == []
        assert page.locator("svg").count() == 3
        verdict = page.locator("#verdict")
        assert verdict.is_visible() and "Do not rely" in verdict.inner_text()
        box = page.locator("#limitations .lim").first.bounding_box()
        assert box is not None and box["y"] < 900  # the top limitation is on the first screen
        assert page.evaluate("document.scripts.length") == 0
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report.png"))
        page.screenshot(path=str(ARTIFACTS / "report-full.png"), full_page=True)
    finally:
        page.close()


def test_hostile_report_runs_nothing(browser, hostile_audit, tmp_path):
    path = tmp_path / "hostile.html"
    page, console, requests, failures = _open(browser, _report(hostile_audit), path)
    try:
        assert requests == [path.as_uri()] and failures == []
        assert page.evaluate("document.scripts.length") == 0
        assert page.evaluate("document.images.length") == 0
        assert "<script>alert(1)</script>" in page.locator("#limitations").inner_text()
        assert not [c for c in console if c[0] in ("error", "pageerror", "dialog")]
    finally:
        page.close()
