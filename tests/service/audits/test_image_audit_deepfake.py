"""End to end on real images for the deepfake domain: production got heavily compressed and the detector
fails on heavily compressed media; the audit's top change claim is the heavy-compression context, read
from the JPEG quantisation tables, measured on its rows.

Data: the real images of :mod:`tests.service.audits.test_image_audit` (LFW faces upscaled, their mirror images,
five sample photos) as JPEG files. SYNTHETIC: the benchmark saves 5 % of them at quality 25 (the rest at
92), production 55 %; the simulated detector is right 90 % of the time, 40 % on the heavily compressed
files of production (labels are seeded draws of real/fake: only whether it is right matters).
"""
from __future__ import annotations

import io
import zipfile

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from tests.imagecontext.images import encode
from tests.service.audit_support import wait_for_audit
from tests.service.audits.test_image_audit import _images

HEAVY, LIGHT = 25, 92


def build_set(seed: int, heavy_share: float, heavy_accuracy: float, *, accuracy: float = 0.9,
              heavy_quality: int = HEAVY) -> bytes:
    """A zip of the real images as JPEG files (``heavy_share`` of them at ``heavy_quality``, the rest at
    quality 92) with a manifest whose simulated detector is right ``accuracy`` of the time,
    ``heavy_accuracy`` on the heavily compressed files (SYNTHETIC)."""
    rng = np.random.default_rng(seed)
    images = _images()
    n = len(images)
    heavy = rng.random(n) < heavy_share
    labels = rng.choice(["real", "fake"], n)
    right = rng.random(n) < np.where(heavy, heavy_accuracy, accuracy)
    predictions = np.where(right, labels, np.where(labels == "real", "fake", "real"))
    manifest = pd.DataFrame({"id": np.arange(n), "image": [f"img/{i}.jpg" for i in range(n)],
                             "label": labels, "prediction": predictions})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i, rgb in enumerate(images):
            zf.writestr(f"img/{i}.jpg", encode(rgb, "JPEG", quality=heavy_quality if heavy[i] else LIGHT))
        zf.writestr("manifest.csv", manifest.to_csv(index=False))
    return buf.getvalue()


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    folder = tmp_path_factory.mktemp("deepfake_audit")
    with TestClient(create_app(Settings(data_dir=folder / "data"))) as client:
        ids = []
        for name, role, data in (("bench", "benchmark", build_set(11, 0.05, 0.9)),
                                 ("prod", "production", build_set(12, 0.55, 0.4))):
            res = client.post("/v1/datasets", files={"file": (f"{name}.zip", data)},
                              data={"name": name, "role": role, "domain": "deepfake"})
            assert res.status_code == 201, res.text
            ids.append(res.json()["id"])
        res = client.post("/v1/audits", json={"benchmark": ids[0], "production": ids[1], "domain": "deepfake"})
        assert res.status_code == 202, res.text
        out = wait_for_audit(client, res.json()["id"], timeout=300)
    assert out["status"] == "succeeded", out.get("error")
    return out


@pytest.mark.slow
def test_heavy_compression_is_the_top_change_claim_and_is_measured(result):
    changes = [lim for lim in result["limitations"] if lim["claim"] == "change"]
    assert changes, [lim["key"] for lim in result["limitations"]]
    top = changes[0]
    assert "compression" in top["key"], [(lim["key"], lim["score"]) for lim in changes]
    assert result["production"]["derived_context"]["compression"]["from"] == "img_jpeg_quality"
    # measured on production's labelled rows, not assumed
    assert "assumes" not in top["statement"]


@pytest.mark.slow
def test_no_other_change_claim_restates_it(result):
    changes = [lim["key"] for lim in result["limitations"] if lim["claim"] == "change"]
    assert not any("concept_shift:all" == key for key in changes[1:]), changes
    assert sum("compression" in key for key in changes) == 1, changes
