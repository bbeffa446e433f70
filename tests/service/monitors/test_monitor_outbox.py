"""The webhook outbox: an alert opened while its receiver is down is delivered once it is back (a
real server on 127.0.0.1, its scheduler tick retrying), the trend page shows one generic text for
every failed attempt, and the outbox's claim and order hold on SQLite and PostgreSQL. All data
SYNTHETIC."""
from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from service.datasets.store import DatasetStore
from service.db import make_engine, migrate, session_factory
from service.monitors.outbox import Outbox, message, retry_delay
from service.monitors.store import MonitorStore, now
from tests.service.monitor_support import synthetic_frame, wait_for
from tests.service.server import ServerProcess, free_port


class PortReceiver:
    """A receiver on a given 127.0.0.1 port; its first ``fail_first`` posts get HTTP 500."""

    def __init__(self, port: int, fail_first: int = 0) -> None:
        self.bodies: list[dict] = []
        self.hits = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                receiver.hits += 1
                if receiver.hits <= fail_first:
                    self.send_response(500)
                else:
                    receiver.bodies.append(body)
                    self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.slow
def test_alert_opened_while_the_receiver_is_down_is_delivered_when_it_is_back(tmp_path):
    drop = tmp_path / "drop"
    drop.mkdir()
    port = free_port()  # nothing listens there yet: connection refused
    proc = ServerProcess(tmp_path / "data", CONTEXTSHIFT_MONITOR_ROOTS=str(drop),
                         CONTEXTSHIFT_WEBHOOK_ALLOW_PRIVATE="true", CONTEXTSHIFT_WEBHOOK_RETRY_S="0.5",
                         CONTEXTSHIFT_MONITOR_RUN_LEASE_S="6").start()
    receiver = None
    try:
        buf = io.BytesIO()
        synthetic_frame(1200, 0).to_csv(buf, index=False)
        bench = httpx.post(f"{proc.url}/v1/datasets", files={"file": ("b.csv", buf.getvalue())},
                           data={"name": "b", "role": "benchmark"}, timeout=60).json()["id"]
        created = httpx.post(f"{proc.url}/v1/monitors", timeout=30, json={
            "name": "down", "benchmark": bench, "source": {"type": "directory", "path": str(drop)},
            "schedule": {"cron": "0 0 1 1 *"}, "options": {"discovery": False},
            "alerts": {"webhook": f"http://127.0.0.1:{port}/hook", "min_severity": "low"}})
        assert created.status_code == 201, created.text
        monitor = created.json()["id"]
        synthetic_frame(300, 5, shift=1.0).to_csv(drop / "shifted.csv", index=False)  # SYNTHETIC: x1 moved 1 sd
        run_id = httpx.post(f"{proc.url}/v1/monitors/{monitor}/run", timeout=30).json()["run_id"]

        def finished():
            runs = httpx.get(f"{proc.url}/v1/monitors/{monitor}/runs", timeout=30).json()["items"]
            run = next((r for r in runs if r["id"] == run_id), None)
            return run if run and run["status"] not in ("queued", "running") else None

        run = wait_for(finished, timeout=120, step=0.3)
        assert run["status"] == "succeeded" and run["alerts"], run  # the dead receiver failed nothing
        page = httpx.get(f"{proc.url}/v1/monitors/{monitor}/report", timeout=30).text
        assert page.count("delivery failed (attempt ") >= 4
        for detail in ("refused", "Errno", "URLError", "ConnectionRefused", "timed out", "[Errno"):
            assert detail not in page, detail

        metrics = httpx.get(f"{proc.url}/metrics", timeout=30).text
        assert 'contextshift_webhook_messages{state="pending"} 1.0' in metrics
        receiver = PortReceiver(port, fail_first=2)  # back, but answering 500 twice first
        wait_for(lambda: receiver.bodies, timeout=60, step=0.2)
        assert receiver.hits == 3
        (body,) = receiver.bodies
        assert body["event"] == "opened" and [a["id"] for a in body["alerts"]] == run["alerts"]
        page = wait_for(lambda: (lambda t: t if "delivered (200)" in t else None)(
            httpx.get(f"{proc.url}/v1/monitors/{monitor}/report", timeout=30).text), timeout=10)
        assert "500" not in page.split("Webhook deliveries", 1)[1].split("</table>", 1)[0]
        metrics = httpx.get(f"{proc.url}/metrics", timeout=30).text
        assert 'contextshift_webhook_messages{state="delivered"} 1.0' in metrics
    finally:
        proc.stop()
        if receiver is not None:
            receiver.close()


@pytest.fixture
def outboxes(database_url, tmp_path):
    engine = make_engine(database_url)
    migrate(engine)
    sessions = session_factory(engine)
    store = MonitorStore(sessions)
    bench = DatasetStore(sessions, tmp_path / "data").create(
        name="b", role="benchmark", domain=None, frame=synthetic_frame(10, 0),
        columns=[{"name": "x1", "role": "feature", "dtype": "float64"}],
        validation={"success": True, "results": []}, sha256="a" * 64)
    yield sessions, store, bench.id
    engine.dispose()


def test_outbox_claims_and_order_on_both_databases(outboxes):
    sessions, store, bench = outboxes
    port = free_port()
    monitor = store.create(name="m", benchmark_id=bench, domain="generic", source={"type": "directory"},
                           schedule={"interval_seconds": 60}, options={},
                           alerts={"webhook": f"http://127.0.0.1:{port}/hook"}, alpha=0.05).id
    store.save_alerts([], [message(monitor, "run_1", "opened", ["al_1"], {"n": 1}, now()),
                           message(monitor, "run_2", "resolved", ["al_1"], {"n": 2}, now())])
    a = Outbox(sessions, allow_private=True, retry_s=0.01, backoff_s=0.0, owner="a")
    b = Outbox(sessions, allow_private=True, retry_s=0.01, backoff_s=0.0, owner="b")
    first, second = a.pending(monitor_id=monitor)
    assert a._claim(first.id) and not b._claim(first.id)  # one sender at a time
    assert a.deliver_pending(due_only=False) == 0  # receiver down: the first is held, so is the second
    rows = a.messages(monitor)
    assert [r.state for r in rows] == ["pending", "pending"] and rows[1].attempts == 0
    receiver = PortReceiver(port)
    try:
        wait_for(lambda: b.deliver_pending(due_only=False) == 2 or None, timeout=60, step=1.0)
    finally:
        receiver.close()
    assert [body["n"] for body in receiver.bodies] == [1, 2]  # opened before resolved
    assert [r.state for r in b.messages(monitor)] == ["delivered", "delivered"]
    assert retry_delay(4, 30) == 30 and retry_delay(5, 30) == 60 and retry_delay(40, 30) == 3600
