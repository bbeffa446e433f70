"""Helpers of the monitor tests: SYNTHETIC frames, whole audit results concluded from hand-built evidence,
a webhook receiver on 127.0.0.1, waiting loops."""
from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pandas as pd
from fastapi.testclient import TestClient

from reports import plan_next_round, rank_limitations, verdict
from reports.result import AuditResult, as_evidence, as_result
from service.app import create_app
from service.settings import Settings, get_settings

# batches of a monitor whose change begins at the third: a 20-point accuracy drop and a 0.5 sd shift of x1
CHANGING_BATCHES = [dict(seed=10 + i, **({"accuracy": 0.65, "shift": 0.5} if i >= 2 else {})) for i in range(5)]


def synthetic_frame(n: int, seed: int, *, shift: float = 0.0, accuracy: float = 0.85) -> pd.DataFrame:
    """SYNTHETIC binary-classification rows: ``shift`` moves feature x1 by that many sds."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    pred = np.where(rng.random(n) < accuracy, y, 1 - y)
    return pd.DataFrame({"id": [f"r{seed}_{i}" for i in range(n)], "x1": rng.normal(shift, 1, n),
                         "x2": rng.normal(0, 1, n), "region": rng.choice(["north", "south"], n), "label": y,
                         "prediction": pred,
                         "score": np.clip(np.where(pred == 1, .7, .3) + rng.normal(0, .1, n), 0, 1)})


def upload_benchmark(client, frame: pd.DataFrame, name: str = "bench") -> str:
    buf = io.BytesIO()
    frame.to_csv(buf, index=False)
    response = client.post("/v1/datasets", files={"file": (f"{name}.csv", buf.getvalue())},
                           data={"name": name, "role": "benchmark"})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def wait_for(predicate, timeout: float = 60.0, step: float = 0.1):
    """Poll until ``predicate()`` is truthy (bounded); return its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"condition not met within {timeout} s")


def wait_run(client, monitor_id: str, run_id: str, timeout: float = 60.0) -> dict:
    def done():
        items = client.get(f"/v1/monitors/{monitor_id}/runs").json()["items"]
        run = next((r for r in items if r["id"] == run_id), None)
        return run if run and run["status"] not in ("queued", "running") else None
    return wait_for(done, timeout)


class Receiver:
    """A webhook receiver on 127.0.0.1 that records JSON bodies; the first ``fail_first`` get a 503."""

    def __init__(self, fail_first: int = 0) -> None:
        self.bodies: list[dict] = []
        self.hits = 0
        self.fail_first = fail_first
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                receiver.hits += 1
                if receiver.hits <= receiver.fail_first:
                    self.send_response(503)
                else:
                    receiver.bodies.append(body)
                    self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def concluded(evidence: dict, *, budget: int = 100) -> AuditResult:
    """A whole AuditResult as the pipeline concludes one from its evidence: the ranked limitations
    (each with its claim), the verdict and the next round's plan, around the header every audit has."""
    found = as_evidence({"id": "au_test", "created_at": "2026-01-01T00:00:00Z", "title": "bench → prod",
                         "domain": "generic", "domain_title": "Generic", **evidence})
    ranked = rank_limitations(found)
    plan = plan_next_round(found, ranked, budget=budget, min_slice_size=found.parameters.min_slice_size)
    return as_result({**found.model_dump(mode="json"), "limitations": [lim.to_dict() for lim in ranked],
                      "verdict": verdict(found, ranked).to_dict(), "next_round": plan.to_dict()})


def cron_environment(monkeypatch, data_dir, roots) -> None:
    """The environment a cron job's ``contextshift monitor run <id>`` runs in: the service's data dir and
    monitor roots from the shell, no scheduler; settings re-read (clear them again when done)."""
    monkeypatch.setenv("CONTEXTSHIFT_DATA_DIR", str(data_dir))
    monkeypatch.setenv("CONTEXTSHIFT_MONITOR_ROOTS", str(roots))
    monkeypatch.setenv("CONTEXTSHIFT_SCHEDULER", "off")
    get_settings.cache_clear()


def directory_monitor(client, benchmark: str, drop, name: str, **body) -> str:
    """The id of an hourly monitor of the folder ``drop`` created through the API."""
    response = client.post("/v1/monitors", json={
        "name": name, "benchmark": benchmark, "source": {"type": "directory", "path": str(drop)},
        "schedule": {"interval_seconds": 3600}, **body})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def write_batch(folder, i: int) -> None:
    """Write batch ``i`` of :data:`CHANGING_BATCHES` (400 SYNTHETIC rows) as ``folder/batch{i}.csv``."""
    b = CHANGING_BATCHES[i]
    synthetic_frame(400, b["seed"], shift=b.get("shift", 0.0), accuracy=b.get("accuracy", 0.85)).to_csv(
        folder / f"batch{i}.csv", index=False)


@contextmanager
def twin_service_monitors(tmp_path, monkeypatch) -> Iterator[tuple[TestClient, dict[str, str], object]]:
    """A service with two identical monitors, ``straight`` and ``killed``, each of its own folder under
    ``tmp_path/roots``: yields ``(client, {name: monitor id}, roots)``; the batches are the test's to drop."""
    roots = tmp_path / "roots"
    for name in ("straight", "killed"):
        (roots / name).mkdir(parents=True)
    cron_environment(monkeypatch, tmp_path / "data", roots)
    try:
        with TestClient(create_app(Settings())) as client:
            bench = upload_benchmark(client, synthetic_frame(1500, 0))
            ids = {name: directory_monitor(client, bench, roots / name, name, options={"discovery": False},
                                           alerts={"min_severity": "low"}) for name in ("straight", "killed")}
            yield client, ids, roots
    finally:
        get_settings.cache_clear()
