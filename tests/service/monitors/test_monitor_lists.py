"""Monitor and alert lists page (``limit`` up to 1000, ``offset``; the next page in
``X-Next-Offset`` and ``Link``, the body still ``{"items": [...]}``), and consecutive no-data runs
are one row with a count instead of a row per check (a real server on 127.0.0.1). All data
SYNTHETIC."""
from __future__ import annotations

import io

import httpx
import pytest

from service.db import make_engine, session_factory
from service.monitors.models import AlertRow
from service.monitors.store import MonitorStore, now
from tests.service.monitor_support import synthetic_frame, wait_for
from tests.service.server import ServerProcess

pytestmark = pytest.mark.slow  # every test here takes seconds: make test-fast skips them


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("lists")
    (base / "drop").mkdir()
    proc = ServerProcess(base / "data", CONTEXTSHIFT_SCHEDULER="false",
                         CONTEXTSHIFT_MONITOR_ROOTS=str(base / "drop")).start()
    buf = io.BytesIO()
    synthetic_frame(400, 0).to_csv(buf, index=False)
    bench = httpx.post(f"{proc.url}/v1/datasets", files={"file": ("b.csv", buf.getvalue())},
                       data={"name": "b", "role": "benchmark"}, timeout=60).json()["id"]
    yield proc, bench, base
    proc.stop()


def _create(proc, bench, drop, name):
    response = httpx.post(f"{proc.url}/v1/monitors", timeout=30, json={
        "name": name, "benchmark": bench, "source": {"type": "directory", "path": str(drop)},
        "schedule": {"interval_seconds": 3600}, "options": {"discovery": False}})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def _pages(url: str, limit: int, **query) -> list[list[dict]]:
    pages, offset = [], 0
    while True:
        response = httpx.get(url, params={**query, "limit": limit, "offset": offset}, timeout=30)
        assert response.status_code == 200, response.text
        pages.append(response.json()["items"])
        if "x-next-offset" not in response.headers:
            assert "link" not in response.headers
            return pages
        offset = int(response.headers["x-next-offset"])
        assert f"offset={offset}" in response.headers["link"] and 'rel="next"' in response.headers["link"]
        assert len(pages) < 20


def test_monitor_and_alert_lists_page(server):
    proc, bench, base = server
    ids = [_create(proc, bench, base / "drop", f"m{i}") for i in range(5)]
    pages = _pages(f"{proc.url}/v1/monitors", 2)
    assert [len(p) for p in pages] == [2, 2, 1]
    assert [m["id"] for p in pages for m in p] == ids  # oldest first, none twice, none left out
    assert len(httpx.get(f"{proc.url}/v1/monitors", timeout=30).json()["items"]) == 5  # default limit 100
    for bad in ({"limit": 0}, {"limit": 1001}, {"offset": -1}):
        assert httpx.get(f"{proc.url}/v1/monitors", params=bad, timeout=30).status_code == 422

    engine = make_engine(f"sqlite:///{base / 'data' / 'contextshift.db'}")
    store = MonitorStore(session_factory(engine))
    t = now()
    store.save_alerts([AlertRow(id=f"al_{i:03d}", monitor_id=ids[i % 2], key=f"k{i}", kind="covariate_shift",
                                severity="high", statement="s", state="open", opened_run_id="run_x",
                                last_seen_run_id="run_x", missed_runs=0, created_at=t, last_seen=t)
                       for i in range(7)])
    engine.dispose()
    pages = _pages(f"{proc.url}/v1/alerts", 3)
    assert [len(p) for p in pages] == [3, 3, 1]
    assert sorted(a["id"] for p in pages for a in p) == [f"al_{i:03d}" for i in range(7)]
    mine = _pages(f"{proc.url}/v1/alerts", 3, monitor=ids[0], state="open")
    assert [len(p) for p in mine] == [3, 1]
    assert httpx.get(f"{proc.url}/v1/alerts", params={"limit": 5000}, timeout=30).status_code == 422


def test_consecutive_no_data_runs_are_one_row(server):
    proc, bench, base = server
    drop = base / "drop" / "quiet"
    drop.mkdir()
    monitor = _create(proc, bench, drop, "quiet")

    def run() -> str:
        run_id = httpx.post(f"{proc.url}/v1/monitors/{monitor}/run", timeout=30).json()["run_id"]

        def final():
            items = httpx.get(f"{proc.url}/v1/monitors/{monitor}/runs", timeout=30).json()["items"]
            return next((r for r in items if r["id"] == run_id and r["status"] not in ("queued", "running")), None)

        return wait_for(final, timeout=120, step=0.2)

    for _ in range(4):
        last = run()
    runs = httpx.get(f"{proc.url}/v1/monitors/{monitor}/runs", timeout=30).json()["items"]
    assert [(r["status"], r["no_data_runs"]) for r in runs] == [("no_new_data", 4)]
    assert runs[0]["id"] == last["id"] and runs[0]["no_data_since"] <= runs[0]["created_at"]
    synthetic_frame(200, 3).to_csv(drop / "a.csv", index=False)
    assert run()["status"] == "succeeded"
    for _ in range(2):
        run()
    runs = httpx.get(f"{proc.url}/v1/monitors/{monitor}/runs", timeout=30).json()["items"]
    assert [(r["status"], r["no_data_runs"]) for r in runs] == [("no_new_data", 2), ("succeeded", None),
                                                               ("no_new_data", 4)]
    detail = httpx.get(f"{proc.url}/v1/monitors/{monitor}", timeout=30).json()
    assert detail["last_run"]["status"] == "no_new_data" and detail["last_run"]["no_data_runs"] == 2
    metrics = httpx.get(f"{proc.url}/metrics", timeout=30).text  # the metric still counts every run
    assert f'contextshift_monitor_runs{{monitor="{monitor}",status="no_new_data"}} 6.0' in metrics
