"""Attacks against a real server process: each request runs while `/healthz` is polled, and the
server's peak RSS (VmHWM, reset before each attack) and its leftover files are read afterwards."""
from __future__ import annotations

import io
import struct
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
from PIL import Image

from tests.service.datasets.test_memory_bounds import peak_rss_mb, reset_peak_rss
from tests.service.server import ServerProcess

PEAK_RSS_BOUND_MB = 1024
HEALTHZ_BOUND_S = 1.0


@dataclass
class Outcome:
    response: httpx.Response
    peak_mb: float
    healthz_worst_s: float
    seconds: float

    def error(self) -> dict:
        return self.response.json()["error"]


def attack(server: ServerProcess, send, *, deadline_s: float = 120) -> Outcome:
    """Run ``send()`` (one request) in a thread while polling ``/healthz``; measure the peak."""
    reset_peak_rss(server.proc.pid)
    box: dict = {}

    def run():
        try:
            box["response"] = send()
        except BaseException as exc:  # re-raised below, in the test's thread
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    start = time.monotonic()
    worker.start()
    worst = 0.0
    with httpx.Client(timeout=5) as client:
        while worker.is_alive() and time.monotonic() - start < deadline_s:
            t0 = time.monotonic()
            assert client.get(f"{server.url}/healthz").status_code == 200
            worst = max(worst, time.monotonic() - t0)
            worker.join(0.2)
    worker.join(5)
    assert not worker.is_alive(), f"the request did not finish within {deadline_s} s"
    if "error" in box:
        raise box["error"]
    return Outcome(box["response"], peak_rss_mb(server.proc.pid), worst, time.monotonic() - start)


def upload(server: ServerProcess, content: bytes, filename: str, **fields) -> httpx.Response:
    data = {"name": filename, "role": "benchmark", **fields}
    return httpx.post(f"{server.url}/v1/datasets", files={"file": (filename, content)}, data=data, timeout=300)


def scratch_files(data_dir: Path) -> list[Path]:
    """What an upload may leave: files in an instance's scratch folder (locks aside)."""
    return [p for p in (data_dir / "scratch").rglob("*") if p.is_file() and p.name != ".lock"]


def cache_files(data_dir: Path) -> set[Path]:
    return set((data_dir / "cache" / "images").rglob("*.json"))


def png(side: int = 64, seed: int = 0) -> bytes:
    rgb = np.random.default_rng(seed).integers(0, 255, (side, side, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, "PNG")
    return buf.getvalue()


def zip_of(members: dict[str, bytes], *, level: int = 6) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def patch_member(data: bytes, name: str, *, crc: int | None = None, size: int | None = None) -> bytes:
    """Rewrite a member's CRC or uncompressed size in both its central and its local header."""
    out = bytearray(data)
    at = 0
    while (at := out.find(b"PK\x01\x02", at)) >= 0:
        name_len = struct.unpack_from("<H", out, at + 28)[0]
        if bytes(out[at + 46:at + 46 + name_len]) == name.encode():
            local = struct.unpack_from("<I", out, at + 42)[0]
            if crc is not None:
                struct.pack_into("<I", out, at + 16, crc)
                struct.pack_into("<I", out, local + 14, crc)
            if size is not None:
                struct.pack_into("<I", out, at + 24, size)
                struct.pack_into("<I", out, local + 22, size)
            return bytes(out)
        at += 4
    raise KeyError(name)


def corrupt_data(data: bytes, name: str) -> bytes:
    """Flip bytes in the middle of a member's compressed stream."""
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(name)
    out = bytearray(data)
    name_len, extra_len = struct.unpack_from("<HH", out, info.header_offset + 26)
    start = info.header_offset + 30 + name_len + extra_len
    for i in range(start + info.compress_size // 3, start + info.compress_size // 3 + 16):
        out[i] ^= 0xA5
    return bytes(out)


def zip64_claiming(entries: int) -> bytes:
    """A valid little zip whose end records claim ``entries`` entries (zip64 form)."""
    data = bytearray(zip_of({"a.csv": b"image\na.png\n"}))
    eocd = data.rfind(b"PK\x05\x06")
    _, _, _, _, _, cd_size, cd_offset, _ = struct.unpack_from("<4s4H2LH", data, eocd)
    record = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, cd_size, cd_offset)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, eocd, 1)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, cd_size, cd_offset, 0)
    return bytes(data[:eocd]) + record + locator + end
