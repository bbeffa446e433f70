"""The dask.distributed client an audit uses: an existing scheduler, or one local cluster per
process, sized to the machine (one single-threaded worker process per core, so pandas and
pyarrow work on separate cores without contending for the GIL)."""
from __future__ import annotations

import os
import threading
from typing import Any

from distributed import Client, LocalCluster

_lock = threading.Lock()
_clients: dict[str, Any] = {}


def get_client(scheduler: str | None = None, *, n_workers: int | None = None, processes: bool = True) -> Any:
    """A connected ``distributed.Client``; ``scheduler`` is an address such as ``tcp://10.0.0.5:8786``.

    Without an address a ``LocalCluster`` is started once per process and reused by later audits
    (starting worker processes costs seconds)."""
    key = scheduler or f"local:{n_workers}:{processes}"
    with _lock:
        client = _clients.get(key)
        if client is not None and client.status == "running":
            return client
        if scheduler:
            client = Client(scheduler, timeout="30s", set_as_default=False)
        else:
            workers = n_workers or max(1, os.cpu_count() or 1)
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                                   dashboard_address=None, silence_logs=40)
            client = Client(cluster, set_as_default=False)
        _clients[key] = client
        return client


def close_clients() -> None:
    """Close every client (and the local clusters this process started)."""
    with _lock:
        for client in _clients.values():
            cluster = getattr(client, "cluster", None)
            client.close()
            if cluster is not None:
                cluster.close()
        _clients.clear()
