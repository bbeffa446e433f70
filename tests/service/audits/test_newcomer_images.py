"""A PNG benchmark against JPEG production through the REST upload: the JPEG-only columns the service
derives (quality, chroma subsampling) are set aside with a note, and every other derived column is
still tested. Real images (the LFW crops of ``skimage.data``, upscaled); the labels and the model's
predictions are seeded draws (only the inputs matter here)."""
from __future__ import annotations

import io
import zipfile

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from tests.imagecontext.images import encode, lfw_upscaled
from tests.service.newcomer_tables import audit, notes

pytestmark = pytest.mark.slow  # every test here takes seconds: make test-fast skips them

N_IMAGES = 60


def _zip(faces, fmt: str, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    ext = "png" if fmt == "PNG" else "jpg"
    labels = rng.choice(["happiness", "neutral"], len(faces))
    manifest = pd.DataFrame({"id": np.arange(len(faces)), "image": [f"img/{i}.{ext}" for i in range(len(faces))],
                             "label": labels, "prediction": np.where(rng.random(len(faces)) < 0.8, labels, "sadness")})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i, rgb in enumerate(faces):
            zf.writestr(f"img/{i}.{ext}", encode(rgb, fmt, **({"quality": 85} if fmt == "JPEG" else {})))
        zf.writestr("manifest.csv", manifest.to_csv(index=False))
    return buf.getvalue()


def test_png_benchmark_against_jpeg_production_still_tests_the_other_features(tmp_path):
    faces, _ = lfw_upscaled()
    bench, prod = _zip(faces[:N_IMAGES], "PNG", 1), _zip(faces[N_IMAGES:2 * N_IMAGES], "JPEG", 2)
    with TestClient(create_app(Settings(data_dir=tmp_path / "data"))) as client:
        ids = []
        for name, role, body in (("png-bench", "benchmark", bench), ("jpeg-prod", "production", prod)):
            res = client.post("/v1/datasets", files={"file": (f"{name}.zip", body)},
                              data={"name": name, "role": role, "domain": "facial_expression"})
            assert res.status_code == 201, res.text
            ids.append(res.json()["id"])
        result = audit(client, ids[0], ids[1], domain="facial_expression", timeout=300)
        html = client.get(f"/v1/audits/{result['id']}/report").text
    # the contexts derived from the pixels are said to be derived, not "not recorded"
    assert "Derived from the images" in html and "not recorded" not in html
    tested = {f["name"] for f in result["covariate"]["features"]}
    assert len(tested) >= 5 and "img_jpeg_quality" not in tested
    text = notes(result)
    assert "'img_jpeg_quality' has no values in the benchmark" in text and "derived from the images" in text
    assert "drop them or provide values" not in text
