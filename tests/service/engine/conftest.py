"""A Dask LocalCluster for the engine tests: one in-process worker (threads), so tests start in
about a second and a scheduler address can be handed to the CLI in the same process."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def dask_client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None,
                                       silence_logs=40)
    client = distributed.Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()

