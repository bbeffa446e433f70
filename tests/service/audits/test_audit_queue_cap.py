"""The audit queue is capped: past ``CONTEXTSHIFT_MAX_QUEUED_AUDITS`` waiting audits, ``POST
/v1/audits`` answers 429 with ``Retry-After`` and the usual error body (real server process)."""
from __future__ import annotations

import io
import time

import httpx
import pytest

from domains.examples import make_example
from tests.service.server import ServerProcess

pytestmark = pytest.mark.slow  # every test here takes seconds: make test-fast skips them


def _upload(url: str, frame, name: str, role: str) -> str:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    res = httpx.post(f"{url}/v1/datasets", files={"file": (f"{name}.parquet", buf.getvalue())},
                     data={"name": name, "role": role, "domain": "medical"}, timeout=60)
    assert res.status_code == 201, res.text
    return res.json()["id"]


def test_queue_past_the_cap_answers_429_with_retry_after(tmp_path):
    server = ServerProcess(tmp_path / "data", CONTEXTSHIFT_SCHEDULER="false", CONTEXTSHIFT_MAX_QUEUED_AUDITS="2",
                           CONTEXTSHIFT_AUDIT_WORKERS="1").start()
    try:
        bench, prod = make_example("medical", n_benchmark=2000, n_production=2000, random_state=1)
        body = {"benchmark": _upload(server.url, bench, "b", "benchmark"),
                "production": _upload(server.url, prod, "p", "production"), "domain": "medical"}
        # one worker: the first audit runs for seconds while the next ones queue up behind it
        answers = [httpx.post(f"{server.url}/v1/audits", json=body, timeout=30) for _ in range(6)]
        codes = [a.status_code for a in answers]
        assert codes[0] == 202 and codes.count(202) <= 3, codes  # at most 1 running + 2 queued
        refused = [a for a in answers if a.status_code == 429]
        assert refused, codes
        error = refused[0].json()["error"]
        assert error["code"] == "queue_full" and error["details"]["limit"] == "CONTEXTSHIFT_MAX_QUEUED_AUDITS"
        assert error["details"]["max_queued_audits"] == 2 and "CONTEXTSHIFT_MAX_QUEUED_AUDITS" in error["message"]
        assert int(refused[0].headers["Retry-After"]) > 0
        listed = httpx.get(f"{server.url}/v1/audits", timeout=10).json()["items"]
        assert len(listed) == codes.count(202)  # a refused audit left no row behind
        # the cap bounds the backlog, it does not close the door: once the queue drains, 202 again
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            states = [a["status"] for a in httpx.get(f"{server.url}/v1/audits", timeout=10).json()["items"]]
            if states.count("queued") < 2:
                break
            time.sleep(0.5)
        assert httpx.post(f"{server.url}/v1/audits", json=body, timeout=30).status_code == 202
    finally:
        server.stop()
