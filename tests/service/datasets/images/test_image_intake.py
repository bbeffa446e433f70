"""Uploads that carry images: zip/tar with a manifest, paths inside the data roots, Parquet bytes."""
from __future__ import annotations

import io
import json
import tarfile
import zipfile

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from tests.imagecontext.images import encode, lfw_upscaled

FACES, NON_FACES = lfw_upscaled()


def images(n=6):
    """n real images: LFW faces, some darkened ×0.5, as PNG bytes, with a manifest frame."""
    out, rows = {}, []
    for i in range(n):
        rgb = FACES[i] if i % 2 == 0 else (FACES[i] * 0.5).astype(np.uint8)
        out[f"img/{i}.png"] = encode(rgb)
        rows.append({"id": i, "image": f"img/{i}.png", "label": "happiness", "prediction": "happiness"})
    return out, pd.DataFrame(rows)


def zip_bytes(files: dict[str, bytes], manifest: pd.DataFrame, name="manifest.csv") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for member, data in files.items():
            zf.writestr(member, data)
        zf.writestr(name, manifest.to_csv(index=False))
    return buf.getvalue()


def upload(client, content, filename, **fields):
    data = {"name": "faces", "role": "benchmark", **fields}
    return client.post("/v1/datasets", files={"file": (filename, content)}, data=data)


def stored_frame(settings, dataset_id):
    parts = sorted((settings.data_dir / "datasets" / dataset_id).rglob("*.parquet"))
    return pd.concat([pd.read_parquet(p) for p in parts])


def test_zip_upload_derives_context_and_roles(client, settings):
    files, manifest = images()
    r = upload(client, zip_bytes(files, manifest), "faces.zip", domain="facial_expression")
    assert r.status_code == 201, r.text
    body = r.json()
    roles = {c["name"]: c["role"] for c in body["columns"]}
    assert roles["illumination"] == "context" and roles["face_size"] == "context"
    assert roles["img_brightness"] == "feature" and roles["emb_0"] == "embedding"
    assert "image" not in roles and body["n_rows"] == 6
    frame = stored_frame(settings, body["id"])
    bright = frame.sort_values("id")["img_brightness"].to_numpy()
    assert (bright[1::2] < bright[0::2]).all()  # the darkened half reads darker
    cached = list((settings.data_dir / "cache" / "images").rglob("*.json"))
    assert len(cached) == 6
    import imagecontext

    recorded = client.app.state.runtime.datasets.get(body["id"]).validation["images"]
    assert recorded["extractor_version"] == imagecontext.EXTRACTOR_VERSION
    assert recorded["source"] == "faces.zip:manifest.csv" and "illumination" in recorded["derived_context"]


def test_user_column_wins_over_derived(client, settings):
    files, manifest = images()
    manifest["illumination"] = "backlit"
    r = upload(client, zip_bytes(files, manifest), "faces.zip", domain="facial_expression")
    assert r.status_code == 201, r.text
    assert set(stored_frame(settings, r.json()["id"])["illumination"]) == {"backlit"}


def test_tar_upload_and_jsonl_manifest(client):
    files, manifest = images(4)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for member, data in {**files, "m.jsonl": manifest.to_json(orient="records", lines=True).encode()}.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    r = upload(client, buf.getvalue(), "faces.tar")
    assert r.status_code == 201, r.text
    assert r.json()["n_rows"] == 4


def test_corrupt_image_is_a_row_error_unless_skipped(client, settings):
    files, manifest = images()
    files["img/3.png"] = files["img/3.png"][:300]
    content = zip_bytes(files, manifest)
    r = upload(client, content, "faces.zip")
    assert r.status_code == 422 and r.json()["error"]["code"] == "bad_images", r.text
    assert [row["row"] for row in r.json()["error"]["details"]["rows"]] == [4]
    assert client.get("/v1/datasets").json()["items"] == []
    r = upload(client, content, "faces.zip", schema=json.dumps({"on_image_error": "skip"}))
    assert r.status_code == 201, r.text
    assert r.json()["n_rows"] == 5


@pytest.mark.parametrize("member", ["../evil.png", "/abs.png"])
def test_path_traversal_refused(client, member):
    files, manifest = images(2)
    files[member] = files.pop("img/0.png")
    manifest.loc[0, "image"] = member
    r = upload(client, zip_bytes(files, manifest), "faces.zip")
    assert r.status_code in (400, 422) and r.json()["error"]["code"] == "unsafe_archive_member", r.text


def test_archive_member_and_image_limits(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", max_archive_members=3, max_images=2)
    files, manifest = images(4)
    with TestClient(create_app(settings)) as client:
        assert upload(client, zip_bytes(files, manifest), "faces.zip").status_code == 413
        few, small = images(3)
        settings_ok = zip_bytes({k: few[k] for k in list(few)[:2]}, small)
    settings = Settings(data_dir=tmp_path / "data2", max_images=2)
    with TestClient(create_app(settings)) as client:
        r = upload(client, settings_ok, "faces.zip")
        assert r.status_code == 422 and r.json()["error"]["code"] == "too_many_images"


def test_image_paths_inside_data_roots(tmp_path):
    root = tmp_path / "root"
    (root / "img").mkdir(parents=True)
    files, manifest = images(3)
    for member, data in files.items():
        (root / member).write_bytes(data)
    outside = tmp_path / "outside.png"
    outside.write_bytes(files["img/0.png"])
    with TestClient(create_app(Settings(data_dir=tmp_path / "d", data_roots=[root]))) as client:
        r = upload(client, manifest.to_csv(index=False).encode(), "faces.csv")
        assert r.status_code == 201, r.text
        bad = manifest.copy()
        bad.loc[1, "image"] = str(outside)
        r = upload(client, bad.to_csv(index=False).encode(), "faces2.csv", name="other")
        assert r.status_code == 422 and "path_not_allowed" in r.text
    with TestClient(create_app(Settings(data_dir=tmp_path / "e"))) as client:
        r = upload(client, manifest.to_csv(index=False).encode(), "faces.csv")
        assert r.status_code == 422 and r.json()["error"]["code"] == "paths_disabled"


@pytest.mark.parametrize("shape", ["bytes", "struct"])
def test_parquet_image_bytes_and_hugging_face_struct(client, shape):
    files, manifest = images(4)
    cells = [files[p] for p in manifest["image"]]
    if shape == "struct":
        cells = [{"bytes": b, "path": p} for b, p in zip(cells, manifest["image"])]
    table = pa.table({"id": manifest["id"], "label": manifest["label"],
                      "prediction": manifest["prediction"], "image": cells})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    r = upload(client, buf.getvalue(), "faces.parquet")
    assert r.status_code == 201, r.text
    assert any(c["name"] == "face_count" for c in r.json()["columns"])


def test_plain_table_untouched(client):
    r = upload(client, b"id,label,prediction\n1,a,a\n2,b,a\n", "plain.csv")
    assert r.status_code == 201 and not any(c["name"].startswith("img_") for c in r.json()["columns"])


def test_second_upload_reads_the_cache(client, monkeypatch):
    import service.datasets.images.derive as intake

    files, manifest = images(4)
    content = zip_bytes(files, manifest)
    assert upload(client, content, "faces.zip").status_code == 201

    def no_decoding(*args):
        raise AssertionError("an image was decoded again")
    monkeypatch.setattr(intake, "_derive", no_decoding)
    r = upload(client, content, "again.zip", name="again")
    assert r.status_code == 201, r.text


def test_on_image_error_validated(client):
    files, manifest = images(2)
    r = upload(client, zip_bytes(files, manifest), "faces.zip", schema=json.dumps({"on_image_error": "maybe"}))
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_schema"


def test_archive_without_manifest_or_with_bad_bytes(client):
    files, _ = images(2)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for member, data in files.items():
            zf.writestr(member, data)
    r = upload(client, buf.getvalue(), "faces.zip")
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_archive"
    r = upload(client, b"not a zip at all", "junk.zip")
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_archive"


def test_derive_images_in_batches_keeps_rows_and_errors(tmp_path, monkeypatch):
    import service.datasets.images.derive as intake
    from service.datasets.images.derive import ImageCache, derive_images
    from service.datasets.images.sources import ImageLimits

    files, _ = images(5)
    datas = list(files.values())
    loaders = [lambda d=d: d for d in datas] + [lambda: b"junk"]

    limits = ImageLimits(max_pixels=10**7, max_bytes=10**7, max_images=100, max_archive_members=100)
    monkeypatch.setattr(intake, "BATCH_PER_WORKER", 2)  # 6 rows in batches of 2 (one worker)
    values, embeddings, errors = derive_images(loaders, limits, ImageCache(tmp_path), workers=1)
    assert list(errors) == [5] and "not_an_image" in errors[5]
    assert all(v is not None for v in values[:5]) and len(embeddings[0]) > 100
    bright = [v["img_brightness"] for v in values[:5]]
    assert bright[1] < bright[0] and bright[3] < bright[2]
