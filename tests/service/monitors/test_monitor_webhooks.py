"""Webhook targets cannot be turned against the service's own network: every internal URL form is
refused when a monitor is defined (a real server on 127.0.0.1) and again when a message is
delivered (a stored URL, a name that resolves to 127.0.0.1 only at delivery), the connection goes
to the address that was checked, redirects are not followed, and the trend page shows one generic
text for every failure. All data SYNTHETIC."""
from __future__ import annotations

import io
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from service.datasets.store import DatasetStore
from service.db import make_engine, migrate, session_factory
from service.monitors import webhook_targets
from service.monitors.alerting import DELIVERED, REFUSED, RETRY, deliver
from service.monitors.outbox import Outbox, message
from service.monitors.store import MonitorStore, now
from service.monitors.webhook_targets import TargetRefused, resolve_target
from tests.service.monitor_support import synthetic_frame
from tests.service.server import ServerProcess

INTERNAL = ["http://127.0.0.1:{port}/hook", "http://localhost:{port}/hook", "http://[::1]:{port}/hook",
            "http://0.0.0.0:{port}/hook", "http://169.254.169.254/latest/meta-data/",
            "http://metadata.google.internal/computeMetadata/v1/", "http://2130706433:{port}/hook",
            "http://0x7f000001:{port}/hook", "http://[::ffff:127.0.0.1]:{port}/hook", "http://127.1:{port}/hook",
            "http://0177.0.0.1:{port}/hook", "http://10.1.2.3/hook", "http://192.168.0.10/hook",
            "http://[fd00:ec2::254]/", "http://224.0.0.1/", "http://[::ffff:169.254.169.254]/"]
MALFORMED = ["http://user:secret@hooks.example.com/hook", "http://hooks.example.com/a\r\nX-Injected: 1",
             "http://hooks.example.com/a b", "http://hooks.exa mple.com/", "ftp://hooks.example.com/x",
             "file:///etc/passwd", "gopher://127.0.0.1:6379/_INFO", "http:///nohost", "http://[::1/"]


class Hook:
    """A receiver on 127.0.0.1 that records what reaches it and answers ``status`` (+ ``location``)."""

    def __init__(self, status: int = 200, location: str | None = None) -> None:
        self.hits: list[dict] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hook.hits.append({"path": self.path, "host": self.headers.get("Host")})
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook():
    h = Hook()
    yield h
    h.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("webhooks")
    (base / "drop").mkdir()
    proc = ServerProcess(base / "data", CONTEXTSHIFT_SCHEDULER="false", CONTEXTSHIFT_MONITOR_ROOTS=str(base / "drop")
                         ).start()
    buf = io.BytesIO()
    synthetic_frame(300, 0).to_csv(buf, index=False)
    bench = httpx.post(f"{proc.url}/v1/datasets", files={"file": ("b.csv", buf.getvalue())},
                       data={"name": "b", "role": "benchmark"}, timeout=60).json()["id"]
    yield proc, bench, base / "drop"
    proc.stop()


def _define(server, webhook):
    proc, bench, drop = server
    return httpx.post(f"{proc.url}/v1/monitors", timeout=30, json={
        "name": "m", "benchmark": bench, "source": {"type": "directory", "path": str(drop)},
        "schedule": {"interval_seconds": 3600}, "alerts": {"webhook": webhook}})


@pytest.mark.slow
def test_every_internal_or_malformed_url_is_refused_at_definition(server, hook):
    for template in INTERNAL + MALFORMED:
        url = template.format(port=hook.port)
        response = _define(server, url)
        assert response.status_code == 422, (url, response.status_code, response.text)
        error = response.json()["error"]
        assert error["code"] in ("invalid_webhook", "invalid_request"), (url, error)
        assert "webhook" in error["message"], (url, error)  # the message names the field
        if error["code"] == "invalid_webhook":
            assert error["details"]["field"] == "alerts.webhook"
    assert httpx.get(f"{server[0].url}/v1/monitors", timeout=30).json()["items"] == []
    assert hook.hits == []
    public = _define(server, "https://hooks.example.com/services/T000/B000")  # not resolvable here: accepted
    assert public.status_code == 201, public.text


@pytest.fixture
def outbox_store(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'store.db'}")
    migrate(engine)
    sessions = session_factory(engine)
    datasets, store = DatasetStore(sessions, tmp_path / "data"), MonitorStore(sessions)
    bench = datasets.create(name="b", role="benchmark", domain=None, frame=synthetic_frame(10, 0),
                            columns=[{"name": "x1", "role": "feature", "dtype": "float64"}],
                            validation={"success": True, "results": []}, sha256="a" * 64)

    def with_webhook(url):
        monitor = store.create(name="m", benchmark_id=bench.id, domain="generic", source={"type": "directory"},
                               schedule={"interval_seconds": 60}, options={}, alerts={"webhook": url}, alpha=0.05)
        store.save_alerts([], [message(monitor.id, "run_1", "opened", ["al_1"], {"text": "hi"}, now())])
        return monitor.id

    yield sessions, store, with_webhook
    engine.dispose()


def test_stored_internal_urls_are_refused_at_delivery_and_stay_queued(outbox_store, hook):
    """A URL stored before these checks existed (or written to the database by hand) is checked
    again when a message goes out: nothing reaches the receiver, and the message is kept."""
    sessions, store, with_webhook = outbox_store
    outbox = Outbox(sessions, allow_private=False, retry_s=60, backoff_s=0.0)
    monitors = [with_webhook(t.format(port=hook.port)) for t in INTERNAL + MALFORMED]
    assert outbox.deliver_pending(due_only=False, limit=100) == 0
    assert hook.hits == []
    for monitor_id in monitors:
        (row,) = outbox.messages(monitor_id)
        assert row.state == "pending" and row.attempts == 1 and row.next_attempt_at > now()
        (attempt,) = store.deliveries(monitor_id)
        assert not attempt.ok and attempt.error == "delivery failed (attempt 1); see the server log"


def test_a_name_resolving_to_loopback_at_delivery_is_refused(monkeypatch, hook):
    """DNS rebinding: public when the monitor is defined, 127.0.0.1 when the message goes out."""
    answers = {"n": 0}

    def rebinding(host, port, *args, **kwargs):
        answers["n"] += 1
        address = "93.184.216.34" if answers["n"] == 1 else "127.0.0.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(webhook_targets.socket, "getaddrinfo", rebinding)
    url = f"http://rebind.example.com:{hook.port}/hook"
    webhook_targets.check_webhook_url(url, allow_private=False)  # public now: accepted
    tries = []
    outcome = deliver(url, {"text": "x"}, record=lambda **kw: tries.append(kw), attempts=3, backoff_s=0,
                      allow_private=False)
    assert outcome == RETRY and hook.hits == [] and len(tries) == 1 and tries[0]["ok"] is False

    def mixed(host, port, *args, **kwargs):  # one public and one internal address: refused, whichever comes first
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port)),
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(webhook_targets.socket, "getaddrinfo", mixed)
    with pytest.raises(TargetRefused):
        resolve_target(url, allow_private=False)


def test_delivery_connects_to_the_checked_address_with_one_lookup(monkeypatch, hook):
    lookups, real = [], socket.getaddrinfo

    def resolver(host, port, *args, **kwargs):
        lookups.append(host)  # the connection itself may only "look up" the checked literal address
        if host == "hooks.on-prem.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(webhook_targets.socket, "getaddrinfo", resolver)
    outcome = deliver(f"http://hooks.on-prem.test:{hook.port}/hook?k=1", {"text": "x"}, record=lambda **kw: None,
                      allow_private=True)
    assert outcome == DELIVERED and lookups.count("hooks.on-prem.test") == 1
    assert set(lookups) <= {"hooks.on-prem.test", "127.0.0.1"}
    assert hook.hits == [{"path": "/hook?k=1", "host": f"hooks.on-prem.test:{hook.port}"}]


def test_redirects_are_not_followed(hook):
    redirector = Hook(status=302, location=f"http://127.0.0.1:{hook.port}/internal")
    try:
        tries = []
        outcome = deliver(f"http://127.0.0.1:{redirector.port}/hook", {"text": "x"},
                          record=lambda **kw: tries.append(kw), backoff_s=0, allow_private=True)
    finally:
        redirector.close()
    assert outcome == REFUSED and len(redirector.hits) == 1 and hook.hits == []
    assert tries == [{"attempt": 1, "ok": False, "status_code": 302,
                      "error": "delivery failed (attempt 1); see the server log"}]
