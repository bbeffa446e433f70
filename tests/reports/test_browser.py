"""The report in a real headless Chromium: it loads with no console error, requests nothing but
the file itself, and renders; a screenshot is kept in test-artifacts/report.png (gitignored).
Wide tables fit at 1400 px, and an audit of data whose names and values carry script payloads
runs no script in the report or in the Evidently companion page."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from reports import conclude, plan_next_round, rank_limitations, render_html

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
    return render_html(conclude(audit, limitations, plan_next_round(audit, limitations, budget=budget,
                                                                       min_slice_size=30)))


def test_report_loads_offline_without_errors(browser, audit, tmp_path):
    path = tmp_path / "report.html"
    page, console, requests, failures = _open(browser, _report(audit), path)
    try:
        assert [c for c in console if c[0] in ("error", "pageerror", "warning")] == []
        assert requests == [path.as_uri()] and failures == []
        histograms = [f for f in audit["covariate"]["features"]
                      if f["drifted"] is True and f["name"] in audit["covariate"]["distributions"]]
        assert page.locator("svg").count() == 3 + len(histograms)  # drift, priors, slices + drifted histograms
        verdict = page.locator("#verdict")
        assert verdict.is_visible() and audit["verdict"]["summary"].split(":")[0] in verdict.inner_text()
        box = page.locator("#top-limitation .st").bounding_box()
        assert box is not None and box["y"] + box["height"] < 900  # the top limitation is on the first screen
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


def _overflowing_tables(page) -> list:
    return page.evaluate("""() => [...document.querySelectorAll('.table-wrap')]
        .filter(e => e.scrollWidth > e.clientWidth + 1)
        .map(e => [e.closest('section').id, e.scrollWidth, e.clientWidth])""")


def test_wide_tables_fit_at_1400_px(browser, audit, tmp_path):
    for s in audit["slices"]:  # every optional column shown: labelled production, long names
        s["production_value"], s["production_ci"], s["p_value_adjusted"] = 0.7, [0.6, 0.8], 0.01
        s["name"] = s["name"] + " " + "with a long descriptive name " * 3
        s["definition"] = 'age_group == "65+" and seatbelt == "none" and ' * 3 + "x > 1"
    audit["label"]["observed_prior"] = {"benign": 0.74, "malignant": 0.26}
    path = tmp_path / "wide.html"
    path.write_text(_report(audit), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(path.as_uri(), wait_until="load")
        assert _overflowing_tables(page) == []
        assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    finally:
        page.close()


HOSTILE = "</script><script>window.__pwned=(window.__pwned||0)+1</script><img src=x onerror=window.__pwned=2>"


@pytest.fixture(scope="module")
def hostile_outcome():
    """A real audit (pipeline + Evidently companion) of data whose column names and category
    values carry script payloads."""
    import numpy as np
    import pandas as pd
    pytest.importorskip("evidently")
    from audit.roles import infer_roles
    from domains.loader import load_builtin
    from service.audits.local import audit_frames

    rng = np.random.default_rng(0)

    def frame(n, shift):
        label = rng.choice(["a", "b"], n)
        score = np.clip((label == "b") * 0.6 + rng.normal(0.2, 0.2, n), 0, 1)
        return pd.DataFrame({"id": [f"r{i}" for i in range(n)], "label": label,
                             "prediction": np.where(score > 0.5, "b", "a"), "score": score,
                             "size" + HOSTILE: rng.normal(shift, 1, n),
                             "site": rng.choice(["north", HOSTILE, "south" if shift else "east"], n)})

    bench, prod = frame(300, 0.0), frame(300, 1.0)
    pack = load_builtin("generic")
    return audit_frames(bench, prod, pack=pack, options={"evidently_companion": True, "budget": 50},
                        benchmark_roles=infer_roles(bench.columns), production_roles=infer_roles(prod.columns),
                        names=("bench" + HOSTILE + ".csv", "prod.csv"))


@pytest.mark.parametrize("page_name", ["report", "companion"])
def test_hostile_data_runs_no_script_on_either_page(browser, hostile_outcome, tmp_path, page_name):
    html = hostile_outcome.html if page_name == "report" else hostile_outcome.companion_html
    assert html, f"the audit produced no {page_name} page"
    page, console, requests, failures = _open(browser, html, tmp_path / f"{page_name}.html")
    try:
        page.wait_for_timeout(500 if page_name == "report" else 2_000)  # let Evidently's own scripts draw
        assert page.evaluate("window.__pwned") is None
        assert not [c for c in console if c[0] == "dialog"]
        assert all(url.startswith(("file:", "data:", "blob:", "about:")) for url in requests), requests
        if page_name == "report":
            assert page.evaluate("document.scripts.length") == 0
        else:  # Evidently drew its dashboard from the escaped data, hostile name included
            assert page.locator("body").inner_text().count("window.__pwned") >= 1
    finally:
        page.close()


def test_docs_render_the_operations(browser, tmp_path):
    """``/docs`` of a real server: Swagger UI reads the OpenAPI 3.1 document and lists the
    operations (Swagger UI 4 stopped at "does not specify a valid version field"), from this
    server only."""
    from tests.service.server import ServerProcess

    server = ServerProcess(tmp_path / "data", CONTEXTSHIFT_SCHEDULER="false").start()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    console, requests = [], []
    page.on("console", lambda m: console.append((m.type, m.text)))
    page.on("pageerror", lambda e: console.append(("pageerror", str(e))))
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(f"{server.url}/docs", wait_until="load")
        page.wait_for_selector(".opblock", timeout=30_000)
        text = page.locator("#swagger-ui").inner_text()
        assert "valid version field" not in text and "Unable to render" not in text
        assert page.locator(".opblock").count() >= 20
        assert page.locator(".opblock-summary-path", has_text="/v1/monitors").count() >= 1
        assert [c for c in console if c[0] in ("error", "pageerror")] == []
        assert all(url.startswith((server.url, "data:")) for url in requests), requests
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "docs.png"))
    finally:
        page.close()
        server.stop()
