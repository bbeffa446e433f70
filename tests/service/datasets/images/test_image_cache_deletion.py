"""Cached thumbnails and values go with the data that holds them: a refused upload removes the
entries it created, a deleted dataset its own, unless another stored dataset holds the same image;
and an upload's counts are refused before any image is read."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from tests.service.datasets.images.attacks import cache_files, png, zip_of


@pytest.fixture
def settings(tmp_path):
    return Settings(data_dir=tmp_path / "data", scheduler=False)


@pytest.fixture
def client(settings):
    with TestClient(create_app(settings)) as c:
        yield c


def archive(seeds, *, extra_rows: str = "") -> bytes:
    members = {f"img/{s}.png": png(64, seed=s) for s in seeds}
    manifest = "image,label\n" + "".join(f"img/{s}.png,a\n" for s in seeds) + extra_rows
    return zip_of({**members, "manifest.csv": manifest.encode()})


def post(client, content, name, **fields):
    return client.post("/v1/datasets", files={"file": (f"{name}.zip", content)},
                       data={"name": name, "role": "benchmark", **fields})


def test_an_upload_refused_after_deriving_leaves_no_cached_thumbnail(client, settings):
    # five readable images and one that is not: refused (422) after the five were derived
    content = archive(range(5), extra_rows="img/missing.png,a\n")
    r = post(client, content, "refused")
    assert r.status_code == 422 and r.json()["error"]["code"] == "bad_images", r.text
    assert cache_files(settings.data_dir) == set()


def test_an_upload_refused_by_validation_leaves_no_cached_thumbnail(client, settings):
    schema = json.dumps({"columns": {"label": "id"}})  # every row has label "a": ids must be unique
    r = post(client, archive(range(3)), "dupe-ids", schema=schema)
    assert r.status_code == 422, r.text
    assert cache_files(settings.data_dir) == set()


def test_deleting_a_dataset_removes_its_images_unless_another_holds_them(client, settings):
    first = post(client, archive([1, 2, 3]), "first").json()["id"]
    second = post(client, archive([3, 4]), "second").json()["id"]
    assert len(cache_files(settings.data_dir)) == 4
    assert client.delete(f"/v1/datasets/{first}").status_code == 204
    left = {p.stem for p in cache_files(settings.data_dir)}
    assert len(left) == 2  # image 3 stays: the second dataset holds it
    assert client.delete(f"/v1/datasets/{second}").status_code == 204
    assert cache_files(settings.data_dir) == set()


def test_a_hash_column_of_a_plain_table_never_names_a_file_to_delete(client, settings, tmp_path):
    victim = settings.data_dir / "victim.json"
    victim.parent.mkdir(parents=True, exist_ok=True)
    victim.write_text("{}")
    table = pd.DataFrame({"x": [1, 2], "image_sha256": ["../../../victim", "a" * 64]})
    r = client.post("/v1/datasets", files={"file": ("t.csv", table.to_csv(index=False).encode())},
                    data={"name": "t", "role": "benchmark"})
    assert r.status_code == 201, r.text
    assert client.delete(f"/v1/datasets/{r.json()['id']}").status_code == 204
    assert victim.exists()


@pytest.mark.slow
def test_counts_are_refused_before_any_image_is_read(client, settings):
    # 80,000 rows naming members the archive does not have: refused on the manifest's count
    rows = pd.DataFrame({"image": [f"img/{i}.png" for i in range(80_000)]})
    r = post(client, zip_of({"manifest.csv": rows.to_csv(index=False).encode()}), "many")
    assert r.status_code == 422 and r.json()["error"]["code"] == "too_many_images", r.text[:300]
    # 65,000 rows with 50 columns of their own: with the derived columns (about 150 an image) the table
    # would exceed a cell limit of 10 M
    wide = pd.DataFrame({f"c{j}": range(65_000) for j in range(50)})
    wide["image"] = [f"img/{i}.png" for i in range(65_000)]
    with TestClient(create_app(Settings(data_dir=settings.data_dir, scheduler=False, max_cells=10_000_000))) as small:
        r = post(small, zip_of({"manifest.csv": wide.to_csv(index=False).encode()}), "wide")
    body = r.json()["error"]
    assert r.status_code == 413 and body["code"] == "too_many_cells", r.text[:300]
    assert "Nothing was derived" in body["message"] and body["details"]["max_images_for_these_columns"] < 65_000
    assert cache_files(settings.data_dir) == set()


def test_the_default_image_limit_can_be_reached_within_the_cell_limit():
    from service.datasets.images.once import stored_columns

    defaults = Settings()
    manifest = pd.DataFrame(columns=["image", "id", "label", "prediction", "site", "device", "split", "a", "b"])
    assert defaults.max_images * stored_columns(manifest, None) <= defaults.max_cells
