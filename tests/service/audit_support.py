"""Helpers of the tests that run audits through the API: a frame uploaded as a Parquet dataset, and a
bounded wait for an audit to end."""
from __future__ import annotations

import io
import time

import pandas as pd


def upload_frame(client, frame: pd.DataFrame, name: str, role: str = "benchmark",
                 domain: str | None = "medical") -> str:
    """The id of ``frame`` uploaded as a Parquet dataset (``domain=None``: no domain pack named)."""
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    data = {"name": name, "role": role} | ({"domain": domain} if domain else {})
    res = client.post("/v1/datasets", files={"file": (f"{name}.parquet", buf.getvalue())}, data=data)
    assert res.status_code == 201, res.text
    return res.json()["id"]


def wait_for_audit(client, audit_id: str, timeout: float = 180) -> dict:
    """The audit's body once it succeeded or failed; ``TimeoutError`` after ``timeout`` seconds."""
    deadline, body = time.monotonic() + timeout, {"status": "unknown"}
    while time.monotonic() < deadline:
        body = client.get(f"/v1/audits/{audit_id}").json()
        if body["status"] in ("succeeded", "failed"):
            return body
        time.sleep(0.2)  # a poll interval, bounded by the deadline
    raise TimeoutError(f"audit {audit_id} still {body['status']}")
