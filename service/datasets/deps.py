"""The dataset store as a FastAPI dependency of the ``/v1/datasets`` routes."""
from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from service.datasets.store import DatasetStore
from service.deps import RuntimeDep


def get_datasets(runtime: RuntimeDep) -> DatasetStore:
    return runtime.datasets


DatasetsDep = Annotated[DatasetStore, Depends(get_datasets)]
