"""Writing a frame as Parquet partitions, for the engine tests."""
from __future__ import annotations


def write_partitions(frame, directory, n_parts: int) -> list[str]:
    """``frame`` as ``n_parts`` Parquet files under ``directory``."""
    import numpy as np

    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, part in enumerate(np.array_split(np.arange(len(frame)), n_parts)):
        path = directory / f"part-{i:05d}.parquet"
        frame.iloc[part].to_parquet(path, index=False)
        paths.append(str(path))
    return paths
