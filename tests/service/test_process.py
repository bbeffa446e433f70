"""Real-process behaviour: a killed or abandoned upload leaves nothing behind."""
from __future__ import annotations

import socket
import time

import httpx
import pytest

from tests.service.server import ServerProcess

pytestmark = pytest.mark.slow  # every test here takes seconds: make test-fast skips them


@pytest.fixture
def server(tmp_path):
    srv = ServerProcess(tmp_path / "data").start()
    yield srv
    srv.stop()


def _start_upload(port: int, total: int) -> socket.socket:
    boundary = "XyZ"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nbig\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"role\"\r\n\r\nbenchmark\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.csv\"\r\n"
            "Content-Type: text/csv\r\n\r\nid,x\r\n").encode()
    sock = socket.create_connection(("127.0.0.1", port))
    request = (f"POST /v1/datasets HTTP/1.1\r\nHost: x\r\nContent-Length: {total}\r\n"
               f"Content-Type: multipart/form-data; boundary={boundary}\r\n\r\n").encode()
    sock.sendall(request + head + b"1,2\r\n" * 20000)
    return sock


def _stored_files(data_dir):
    return [p for sub in ("datasets", "tmp") if (data_dir / sub).exists() for p in (data_dir / sub).iterdir()]


def test_abandoned_upload_stores_nothing_and_server_stays_up(server, tmp_path):
    sock = _start_upload(server.port, total=10_000_000)
    # the scenario: a client that stalls mid-body, then hangs up (the form is parsed in memory until it is
    # complete, so there is no event to wait for)
    time.sleep(0.3)
    sock.close()
    # what is checked is an absence (nothing stored), which a poll would see at once: the server is given
    # the time to act on the hang-up first
    time.sleep(0.3)
    assert httpx.get(f"{server.url}/healthz").status_code == 200
    assert httpx.get(f"{server.url}/v1/datasets").json()["items"] == []
    assert _stored_files(tmp_path / "data") == []


def test_killed_server_mid_upload_leaves_no_dataset(server, tmp_path):
    sock = _start_upload(server.port, total=10_000_000)
    time.sleep(0.3)  # the scenario: the server dies while the body is still arriving
    server.kill()
    sock.close()
    restarted = ServerProcess(tmp_path / "data").start()
    try:
        assert httpx.get(f"{restarted.url}/v1/datasets").json()["items"] == []
        assert _stored_files(tmp_path / "data") == []
        ok = httpx.post(f"{restarted.url}/v1/datasets", files={"file": ("a.csv", b"id,x\n1,2\n2,3\n")},
                        data={"name": "after", "role": "production"}, timeout=60)
        assert ok.status_code == 201, ok.text
    finally:
        restarted.stop()
