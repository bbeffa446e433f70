"""A full data dir answers 507 naming it, logs it once, shows free space on /metrics, stores
nothing half-way, and the server goes on once space is freed.

The real case runs a server on a 20 MB tmpfs (needs root and mount; skipped otherwise); the
simulated one raises ENOSPC where parts are written, for machines without mount."""
from __future__ import annotations

import errno
import subprocess

import httpx
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.datasets.partitions import PartWriter
from service.settings import Settings
from tests.service.server import ServerProcess


@pytest.fixture
def tiny_disk(tmp_path):
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()[:200]}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def csv_of(n_bytes: int) -> bytes:
    row = b"%d,0.5,abc\n"
    return b"id,x,y\n" + b"".join(row % i for i in range(n_bytes // 12))


def post(url, content, name):
    return httpx.post(f"{url}/v1/datasets", files={"file": (f"{name}.csv", content)},
                      data={"name": name, "role": "benchmark"}, timeout=60)


@pytest.mark.slow
def test_a_full_data_dir_answers_507_and_recovers(tiny_disk):
    data_dir = tiny_disk / "data"
    server = ServerProcess(data_dir, CONTEXTSHIFT_SCHEDULER="false").start()
    try:
        big = post(server.url, csv_of(30 << 20), "too-big")  # 30 MB into 20 MB
        assert big.status_code == 507, big.text[:300]
        error = big.json()["error"]
        assert error["code"] == "insufficient_storage" and str(data_dir.resolve()) in error["message"]
        assert big.headers.get("retry-after")
        filler = tiny_disk / "filler"
        with open(filler, "wb") as fh:  # fill what is left, so even the database cannot grow
            try:
                while True:
                    fh.write(b"\x00" * (1 << 20))
                    fh.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        small = post(server.url, csv_of(200_000), "small")
        assert small.status_code == 507, small.text[:300]
        metrics = httpx.get(f"{server.url}/metrics", timeout=10).text
        assert "contextshift_data_dir_free_bytes" in metrics
        filler.unlink()
        again = post(server.url, csv_of(200_000), "small")
        assert again.status_code == 201, again.text[:300]
        listed = httpx.get(f"{server.url}/v1/datasets", timeout=10).json()["items"]
        assert [d["name"] for d in listed] == ["small"]  # nothing of the refused uploads was stored
    finally:
        server.stop()
    log = server.proc.stdout.read().decode()
    assert log.count("is full") == 1, log[-2000:]


def test_enospc_while_writing_parts_is_507(tmp_path, monkeypatch):
    def full(self, table):
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")
    monkeypatch.setattr(PartWriter, "write", full)
    settings = Settings(data_dir=tmp_path / "data", scheduler=False)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        res = client.post("/v1/datasets", files={"file": ("t.csv", b"a,b\n1,2\n")},
                          data={"name": "t", "role": "benchmark"})
        assert res.status_code == 507, res.text
        assert str(settings.data_dir.resolve()) in res.json()["error"]["message"]
        assert client.get("/v1/datasets").json()["items"] == []
