"""The dataset answer says which columns were derived from the images (extractor, version, the pack
context each feeds) and which are the user's; an audit's report says which context values were derived."""
from __future__ import annotations

import imagecontext
from tests.service.datasets.images.test_image_intake import images, upload, zip_bytes


def sources(body) -> dict[str, dict]:
    return {e["column"]: e for e in body["validation"]["images"]["columns"]}


def test_upload_answer_names_derived_and_user_columns(client):
    files, manifest = images()
    manifest["skin_tone"] = 3  # the user's own skin tone wins over the one derived from skin_ita_category
    r = upload(client, zip_bytes(files, manifest), "faces.zip", domain="facial_expression")
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["validation"]["images"]["extractor_version"] == imagecontext.EXTRACTOR_VERSION
    by = sources(body)
    illumination = by["illumination"]
    assert illumination["source"] == "derived_from_image" and illumination["derived_from"] == "img_brightness"
    assert illumination["extractor"] == "imagecontext.pixel_stats"
    assert illumination["extractor_version"] == imagecontext.EXTRACTOR_VERSION
    assert by["face_size"]["extractor"] == "imagecontext.faces" and by["face_size"]["feeds_context"] == ["face_size"]
    assert by["img_brightness"]["feeds_context"] == ["illumination"]
    assert by["face_height_px"]["feeds_context"] == ["face_size"]
    assert by["skin_tone"]["source"] == "user_metadata" and by["skin_tone"]["extractor"] is None
    assert by["skin_ita_category"]["feeds_context"] == []  # the user's column won: it feeds nothing
    assert by["emb_*"]["extractor"] == "imagecontext.embedding"
    # the same answer when the dataset is read back
    again = client.get(f"/v1/datasets/{body['id']}").json()
    assert sources(again) == by


def test_table_without_images_has_no_image_sources(client):
    r = client.post("/v1/datasets", files={"file": ("t.csv", b"id,label,prediction\n1,a,a\n2,b,a\n")},
                    data={"name": "plain", "role": "benchmark"})
    assert r.status_code == 201, r.text
    assert r.json()["validation"]["images"] is None
