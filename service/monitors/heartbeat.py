"""The heartbeat of a process's monitor runs: a daemon thread that tells the database it is alive.

Every :func:`heartbeat_interval` it refreshes ``heartbeat_at`` of the runs this process is
executing and extends its monitor leases by one run lease. A process that dies (``kill -9``,
power loss) stops beating; after one lease any live instance fails its runs as interrupted
(:meth:`MonitorStore.recover`) and takes the monitors over.
"""
from __future__ import annotations

import logging
import threading

from service.monitors.store import MonitorStore

log = logging.getLogger("contextshift.monitors")


def heartbeat_interval(lease_s: float) -> float:
    """A sixth of the lease (so a few missed beats are not a death), between 0.2 and 10 s."""
    return min(max(lease_s / 6, 0.2), 10.0)


class Heartbeat:
    def __init__(self, store: MonitorStore, *, lease_s: float) -> None:
        self.store, self.lease_s = store, lease_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="monitor-heartbeat", daemon=True)

    def start(self) -> "Heartbeat":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(heartbeat_interval(self.lease_s)):
            try:
                self.store.heartbeat(self.lease_s)
            except Exception:  # a passing database fault: the next beat tries again
                log.exception("monitor heartbeat failed")
