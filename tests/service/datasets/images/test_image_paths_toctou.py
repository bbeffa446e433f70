"""Image paths under the data roots are read through the descriptor that was checked: swapping a
folder for a symlink to outside the roots while rows are read never reads the outside file."""
from __future__ import annotations

import hashlib
import os
import threading

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.datasets.images.open_inside import read_inside
from service.settings import Settings
from tests.service.datasets.images.attacks import cache_files, png

N_FILES = 300


@pytest.fixture
def swapping(tmp_path):
    """root/imgs alternates between a real folder and a symlink to a folder outside the roots."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "real").mkdir(parents=True)
    outside.mkdir()
    inside_bytes, outside_bytes = png(32, seed=1), png(32, seed=2)
    for i in range(N_FILES):  # the same names inside and outside; the outside ones differ in bytes
        (root / "real" / f"a{i}.png").write_bytes(inside_bytes)
        (outside / f"a{i}.png").write_bytes(outside_bytes)
    link = root / "imgs"
    os.symlink(root / "real", link)
    stop = threading.Event()

    def swap():
        while not stop.is_set():
            for target in (outside, root / "real"):
                tmp = root / "imgs.tmp"
                os.symlink(target, tmp)
                os.replace(tmp, link)
    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    yield root, inside_bytes, outside_bytes
    stop.set()
    thread.join(5)


def test_reads_never_return_the_outside_file(swapping):
    root, inside_bytes, outside_bytes = swapping
    seen = {"inside": 0, "refused": 0}
    for _ in range(3000):
        try:
            data = read_inside("imgs/a0.png", [root], 1 << 20)
        except ValueError:
            seen["refused"] += 1
            continue
        assert data != outside_bytes
        assert data == inside_bytes
        seen["inside"] += 1
    assert seen["inside"] > 0 and seen["refused"] > 0, seen  # the race was really run both ways


def test_an_upload_of_paths_under_a_swapping_symlink_derives_nothing_from_outside(swapping, tmp_path):
    root, _, outside_bytes = swapping
    outside_sha = hashlib.sha256(outside_bytes).hexdigest()
    settings = Settings(data_dir=tmp_path / "data", data_roots=[root], scheduler=False)
    manifest = pd.DataFrame({"image": [f"imgs/a{i}.png" for i in range(N_FILES)], "n": range(N_FILES)})
    with TestClient(create_app(settings)) as client:
        r = client.post("/v1/datasets", files={"file": ("paths.csv", manifest.to_csv(index=False).encode())},
                        data={"name": "paths", "role": "benchmark", "schema": '{"on_image_error": "skip"}'})
        assert r.status_code in (201, 422), r.text[:300]
        for path in (settings.data_dir / "datasets").rglob("*.parquet"):
            assert outside_sha not in set(pd.read_parquet(path, columns=["image_sha256"])["image_sha256"])
    assert not any(p.stem == outside_sha for p in cache_files(settings.data_dir))
