"""Registered datasets of image paths on the Dask engine: the images are derived on the workers,
with the values an upload of the same images gets, and the audit runs on them.

Data: the 100 LFW face crops of ``skimage.data.lfw_subset()`` upscaled ×4, their mirror images and
five sample photos (skimage astronaut/chelsea/coffee, sklearn china/flower), written as PNG files
inside the data root, with JPEG copies of the photos; a documented SYNTHETIC perturbation darkens
part of them (pixel values × 0.5) and a simulated model errs more often on the darkened ones
(:func:`tests.service.audits.test_image_audit.build_set` draws: benchmark 15 % darkened, production 50 %).
The tables of paths are Parquet partitions with small row groups, so every side is several tasks.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from service.app import create_app
from service.settings import Settings
from tests.service.audit_support import wait_for_audit
from tests.service.audits.engine.parts import write_partitions
from tests.service.audits.test_image_audit import labelled_images

pytest.importorskip("distributed")


def _write_set(root, name: str, seed: int, dark_share: float, dark_accuracy: float) -> pd.DataFrame:
    images, dark, labels, predictions = labelled_images(seed, dark_share, dark_accuracy)
    n = len(images)
    paths = []
    for i, rgb in enumerate(images):
        pixels = (rgb * 0.5).astype(np.uint8) if dark[i] else rgb
        jpeg = i >= n - 5  # the five photos as JPEG: quality and subsampling are derived too
        path = f"{name}/img/{i}.{'jpg' if jpeg else 'png'}"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.ascontiguousarray(pixels)).save(root / path, quality=80) if jpeg else \
            Image.fromarray(np.ascontiguousarray(pixels)).save(root / path)
        paths.append(path)
    frame = pd.DataFrame({"id": np.arange(n), "image": paths, "label": labels,
                          "prediction": predictions})
    for i, part in enumerate(write_partitions(frame, root / name / "table", 2)):
        pd.read_parquet(part).to_parquet(part, index=False, row_group_size=40)  # several tasks per file
    return frame.assign(dark=dark)


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    root = tmp_path_factory.mktemp("lake")
    bench = _write_set(root, "bench", 1, 0.15, 0.85)
    prod = _write_set(root, "prod", 2, 0.5, 0.35)
    return root, bench, prod


@pytest.fixture
def client(tmp_path, lake, dask_client):
    settings = Settings(data_dir=tmp_path / "data", data_roots=[lake[0]], scheduler=False,
                        dask_scheduler=dask_client.scheduler.address)
    with TestClient(create_app(settings)) as c:
        yield c


def register(client, path, name, role, **extra):
    res = client.post("/v1/datasets/register", json={"name": name, "role": role, "path": str(path),
                                                    "domain": "facial_expression", **extra})
    assert res.status_code == 201, res.text
    return res.json()


def audit(client, bench, prod, **options):
    res = client.post("/v1/audits", json={"benchmark": bench, "production": prod, "domain": "facial_expression",
                                          "options": {"engine": "dask", **options}})
    assert res.status_code == 202, res.text
    return res.json()["id"], wait_for_audit(client, res.json()["id"], timeout=600)


@pytest.mark.slow
def test_audit_derives_the_images_on_the_workers(client, lake):
    root, _, truth = lake
    bench = register(client, root / "bench" / "table", "bench", "benchmark")
    assert bench["validation"]["images"]["on_image_error"] == "fail"
    assert {c["name"]: c["role"] for c in bench["columns"]}["image"] == "ignore"
    prod = register(client, root / "prod" / "table", "prod", "production")["id"]
    audit_id, result = audit(client, bench["id"], prod, report_thumbnails=True, sample_rows=10_000)
    assert result["status"] == "succeeded", result.get("error")
    # the dim slice exists only through illumination derived from the pixels: it is the top finding
    first = result["limitations"][0]
    assert first["slice"] == "dim_or_backlit" and first["evidence"]["value"] < 0.5
    assert first["decision"]["n"] >= 0.8 * truth["dark"].sum()
    assert result["production"]["derived_context"]["illumination"]["from"] == "img_brightness"
    engine = result["parameters"]["engine"]
    assert engine["name"] == "dask" and engine["images"]["production"]["n_images"] == len(truth)
    html = client.get(f"/v1/audits/{audit_id}/report").text
    top = re.search(r'id="top-limitation">.*?</div>\s*</div>', html, re.S).group(0)
    assert top.count('<img src="data:image/jpeg;base64,') == 8  # thumbnails from the production sample
    # the derived partitions were scratch: nothing is left in the instance's scratch folder
    assert not list(client.app.state.runtime.datasets.tmp_dir.glob("images-*"))


@pytest.mark.slow
def test_values_equal_the_upload_path(lake, dask_client, tmp_path):
    """Derived on the workers from the registered files = stored by an upload of the same table."""
    from service.audits.engine.images import derive_on_cluster
    from service.audits.local import load_pack

    root, _, truth = lake
    pack = load_pack("facial_expression")
    settings = Settings(data_dir=tmp_path / "cluster", data_roots=[root])
    files = sorted(str(p) for p in (root / "prod" / "table").glob("*.parquet"))
    derived = derive_on_cluster(dask_client, files, settings=settings, pack=pack, on_error="fail",
                                out_dir=tmp_path / "out", shown="prod")
    assert len(derived.files) > len(files) and derived.n_images == len(truth)  # several tasks per file
    on_cluster = pd.concat([pd.read_parquet(f) for f in derived.files]).set_index("id").sort_index()
    # the upload path, with its own (empty) cache: nothing is shared but the images
    table = tmp_path / "prod.parquet"
    truth.drop(columns=["dark"]).to_parquet(table, index=False)
    with TestClient(create_app(Settings(data_dir=tmp_path / "upload", data_roots=[root]))) as c:
        res = c.post("/v1/datasets", files={"file": ("prod.parquet", table.read_bytes())},
                     data={"name": "prod", "role": "production", "domain": "facial_expression"})
        assert res.status_code == 201, res.text
        stored = c.app.state.runtime.datasets.load_frame(res.json()["id"]).set_index("id").sort_index()
    assert list(on_cluster.columns) == list(stored.columns)
    pd.testing.assert_frame_equal(on_cluster, stored, check_dtype=False)
    assert set(derived.added) == {"illumination", "face_size", "skin_tone"}
    assert (on_cluster.loc[truth["dark"].to_numpy(), "illumination"] == "dim").mean() > 0.9
    assert set(on_cluster["img_format"]) == {"PNG", "JPEG"} and on_cluster["face_count"].max() >= 1


@pytest.mark.slow
def test_unreadable_image_fails_the_audit_unless_skipped(client, lake, tmp_path):
    root, bench_frame, _ = lake
    broken = bench_frame.drop(columns=["dark"]).copy()
    broken.loc[7, "image"] = "bench/img/missing.png"
    broken.loc[11, "image"] = "../outside.png"
    write_partitions(broken, root / "broken", 2)
    bench = register(client, root / "bench" / "table", "bench", "benchmark")["id"]
    failing = register(client, root / "broken", "broken", "production")["id"]
    _, result = audit(client, bench, failing)
    assert result["status"] == "failed" and result["error"]["code"] == "bad_images"
    assert [r["row"] for r in result["error"]["details"]["rows"]] == [8, 12]
    skipping = register(client, root / "broken", "broken-skip", "production",
                        schema={"on_image_error": "skip"})["id"]
    _, result = audit(client, bench, skipping)
    assert result["status"] == "succeeded", result.get("error")
    images = result["parameters"]["engine"]["images"]["production"]
    assert images["n_images"] == len(broken) - 2 and [r["row"] for r in images["skipped_rows"]] == [8, 12]


@pytest.mark.slow
def test_second_audit_decodes_nothing_again(client, lake, monkeypatch):
    import service.datasets.images.derive as derive

    root, _, _ = lake
    bench = register(client, root / "bench" / "table", "bench", "benchmark")["id"]
    prod = register(client, root / "prod" / "table", "prod", "production")["id"]
    assert audit(client, bench, prod)[1]["status"] == "succeeded"

    def no_decoding(*args):
        raise AssertionError("an image was decoded again")
    monkeypatch.setattr(derive, "_derive", no_decoding)  # the in-process workers see the patch
    assert audit(client, bench, prod)[1]["status"] == "succeeded"


def test_fingerprint_follows_the_images_not_the_paths(lake, dask_client, tmp_path):
    """A benchmark scan is cached under the derived partitions' fingerprint: replacing an image
    at the same path must change it, deriving the same images again must not."""
    import shutil

    from service.audits.engine.images import derive_on_cluster
    from service.audits.local import load_pack

    root, bench, _ = lake
    small = tmp_path / "small"
    rows = bench.head(12).drop(columns=["dark"])
    for path in rows["image"]:
        (small / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / path, small / path)
    write_partitions(rows, small / "table", 2)
    settings = Settings(data_dir=tmp_path / "data", data_roots=[small])
    files = sorted(str(p) for p in (small / "table").glob("*.parquet"))

    def derive(out):
        return derive_on_cluster(dask_client, files, settings=settings, pack=load_pack("facial_expression"),
                                 on_error="fail", out_dir=tmp_path / out, shown="small")
    first, again = derive("a"), derive("b")
    assert first.fingerprint == again.fingerprint and first.n_images == 12
    target = small / rows["image"].iat[3]
    darker = (np.asarray(Image.open(target).convert("RGB")) * 0.5).astype(np.uint8)
    Image.fromarray(darker).save(target, format=Image.open(target).format)
    changed = derive("c")
    assert changed.fingerprint != first.fingerprint
    brightness = [pd.read_parquet(f).set_index("id")["img_brightness"] for f in (first.files[0], changed.files[0])]
    assert brightness[1].loc[3] < brightness[0].loc[3] - 5 and brightness[1].drop(3).equals(brightness[0].drop(3))


def test_pandas_engine_refuses_to_audit_image_paths_it_would_not_derive(client, lake):
    root, _, _ = lake
    bench = register(client, root / "bench" / "table", "bench", "benchmark")["id"]
    prod = register(client, root / "prod" / "table", "prod", "production")["id"]
    res = client.post("/v1/audits", json={"benchmark": bench, "production": prod, "domain": "facial_expression"})
    result = wait_for_audit(client, res.json()["id"], timeout=120)
    assert result["status"] == "failed" and result["error"]["code"] == "images_need_dask"
