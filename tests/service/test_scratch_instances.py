"""Two instances on one database and one data dir: restarting one never deletes the other's
upload in flight; the scratch of an instance that died is cleaned up (real server processes)."""
from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from tests.service.server import ServerProcess

ROWS = 20_000
# small chunks: the upload is validated and written 2,000 cells at a time, so it takes seconds
SLOW = {"CONTEXTSHIFT_SCHEDULER": "false", "CONTEXTSHIFT_UPLOAD_CHUNK_CELLS": "2000",
        "CONTEXTSHIFT_PARTITION_ROWS": "5000"}


def _csv() -> bytes:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"id": np.arange(ROWS), "x": rng.normal(size=ROWS).round(3),
                          "k": rng.integers(0, 9, ROWS), "site": rng.choice(["a", "b"], ROWS)})
    return frame.to_csv(index=False).encode()


def _scratch(data_dir: Path) -> set[Path]:
    return set((data_dir / "scratch").glob("instance-*")) if (data_dir / "scratch").exists() else set()


def _upload_in_background(url: str, data: bytes, outcome: dict) -> threading.Thread:
    def post():
        try:
            outcome["response"] = httpx.post(f"{url}/v1/datasets", files={"file": ("big.csv", data)},
                                             data={"name": "big", "role": "benchmark"}, timeout=300)
        except httpx.HTTPError as exc:  # the server died under it
            outcome["error"] = exc
        outcome["finished_at"] = time.monotonic()

    thread = threading.Thread(target=post, daemon=True)
    thread.start()
    return thread


def _staged_parts(data_dir: Path) -> list[Path]:
    return [p for p in data_dir.rglob("part-*.parquet") if p.parent.name.startswith("staging-")]


def _wait_for_staging(data_dir: Path, thread: threading.Thread) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and thread.is_alive():
        if _staged_parts(data_dir):
            return
        time.sleep(0.05)
    raise AssertionError("the upload never started writing parts")


@pytest.mark.slow
def test_restarting_one_instance_keeps_the_others_upload(tmp_path, database_url):
    data_dir = tmp_path / "data"
    env = {**SLOW, "CONTEXTSHIFT_DATABASE_URL": database_url}
    a = ServerProcess(data_dir, **env).start()
    b = ServerProcess(data_dir, **env).start()
    try:
        outcome: dict = {}
        thread = _upload_in_background(a.url, _csv(), outcome)
        _wait_for_staging(data_dir, thread)
        os.kill(a.proc.pid, signal.SIGSTOP)  # freeze A mid-upload, whatever the machine's load
        try:
            assert _staged_parts(data_dir), "A committed before it was frozen: nothing to prove"
            b.stop()
            b.start()  # B's start-up cleanup runs while A's upload is spooled, staged, half written
        finally:
            os.kill(a.proc.pid, signal.SIGCONT)
        thread.join(300)
        res = outcome.get("response")
        assert res is not None and res.status_code == 201, (outcome, res and res.text[:300])
        assert res.json()["n_rows"] == ROWS
        listed = httpx.get(f"{b.url}/v1/datasets", timeout=10).json()["items"]
        assert [d["n_rows"] for d in listed] == [ROWS]
        stored = [d for d in (data_dir / "datasets").iterdir()]
        assert [d.name for d in stored] == [res.json()["id"]]
        assert not list(stored[0].glob(".lock"))  # the staging lock goes once the row is committed
    finally:
        a.stop()
        b.stop()


@pytest.mark.slow
def test_a_dead_instances_scratch_is_removed_at_the_next_start(tmp_path):
    data_dir = tmp_path / "data"
    a = ServerProcess(data_dir, **SLOW).start()
    try:
        outcome: dict = {}
        thread = _upload_in_background(a.url, _csv(), outcome)
        _wait_for_staging(data_dir, thread)
        a.kill()  # SIGKILL mid-upload: its lock goes with the process, its files stay
        thread.join(30)
        dead = _scratch(data_dir)
        assert len(dead) == 1 and list(dead.pop().glob("files/staging-*"))
        young = ServerProcess(data_dir, **SLOW).start()  # within the grace period: left alone
        young.stop()
        assert len(_scratch(data_dir)) >= 1
        for folder in _scratch(data_dir):
            os.utime(folder, (time.time() - 3600, time.time() - 3600))  # an hour old: past any grace
        b = ServerProcess(data_dir, **SLOW).start()
        try:
            left = _scratch(data_dir)
            assert len(left) == 1 and not list(left.pop().glob("files/*"))  # only B's own, empty
            assert not (data_dir / "datasets").exists() or not any((data_dir / "datasets").iterdir())
            assert httpx.get(f"{b.url}/v1/datasets", timeout=10).json()["items"] == []
        finally:
            b.stop()
    finally:
        a.stop()


def test_unlocked_legacy_scratch_is_removed_only_past_the_grace(tmp_path):
    from service.datasets.store import DatasetStore
    from service.db import make_engine, migrate, session_factory

    engine = make_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    migrate(engine)
    store = DatasetStore(session_factory(engine), tmp_path / "data", orphan_grace_s=60)
    legacy = tmp_path / "data" / "tmp"
    legacy.mkdir(parents=True)
    (legacy / "upload-fresh").write_bytes(b"an older version's upload in flight")
    (legacy / "upload-old").write_bytes(b"left by a crash")
    os.utime(legacy / "upload-old", (time.time() - 3600, time.time() - 3600))
    assert store.remove_orphans() == 1
    assert [p.name for p in legacy.iterdir()] == ["upload-fresh"]
    store.close()
    assert not _scratch(tmp_path / "data")
    engine.dispose()
