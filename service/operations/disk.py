"""A full data dir: answered 507 naming the folder, logged once, and its free space on ``/metrics``.

Writes to the data dir (spooled uploads, Parquet parts, the SQLite database, the image cache)
fail with ``ENOSPC`` when its file system is full. Nothing is half-stored then (parts are staged
and the database row is the commit), so the answer is 507 Insufficient Storage naming the data
dir and its free bytes, not a generic 500. The condition is logged once, not once per request,
until a later full-disk error comes more than :data:`LOG_EVERY_S` after the last one logged.
"""
from __future__ import annotations

import logging
import shutil
import threading
import time
from pathlib import Path

from fastapi.responses import JSONResponse
from prometheus_client.core import GaugeMetricFamily

__all__ = ["DiskCollector", "FullDiskAnswer", "free_bytes"]

log = logging.getLogger("contextshift")
LOG_EVERY_S = 600.0


def free_bytes(data_dir: Path) -> int | None:
    """Bytes free to this process on the data dir's file system (None if it cannot be read)."""
    try:
        return shutil.disk_usage(Path(data_dir)).free
    except OSError:
        return None


class FullDiskAnswer:
    """The 507 answer for the data dir, and the log line said once."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self._guard = threading.Lock()
        self._logged_at: float | None = None

    def response(self, exc: BaseException) -> JSONResponse:
        free = free_bytes(self.data_dir)
        where = str(self.data_dir.resolve())
        with self._guard:
            now = time.monotonic()
            first = self._logged_at is None or now - self._logged_at > LOG_EVERY_S
            if first:
                self._logged_at = now
        if first:
            log.error("the data dir %s is full (%s bytes free): requests that write answer 507 until space is "
                      "freed (%s)", where, free, type(exc).__name__)
        message = (f"The server's data dir {where} is full ({free if free is not None else 'unknown'} bytes free); "
                   "nothing was stored. Free space there (or move CONTEXTSHIFT_DATA_DIR) and try again.")
        return JSONResponse(status_code=507, headers={"Retry-After": "60"},
                            content={"error": {"code": "insufficient_storage", "message": message,
                                               "details": {"data_dir": where, "free_bytes": free,
                                                           "setting": "CONTEXTSHIFT_DATA_DIR"}}})


class DiskCollector:
    """``contextshift_data_dir_free_bytes`` and ``..._total_bytes`` for ``/metrics``."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)

    def collect(self):
        try:
            usage = shutil.disk_usage(self.data_dir)
        except OSError:
            return
        for name, value, text in (("free", usage.free, "Bytes free on the data dir's file system."),
                                  ("total", usage.total, "Size of the data dir's file system in bytes.")):
            family = GaugeMetricFamily(f"contextshift_data_dir_{name}_bytes", text, labels=["data_dir"])
            family.add_metric([str(self.data_dir)], float(value))
            yield family
