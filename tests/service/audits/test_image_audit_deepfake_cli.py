"""End to end for the deepfake pack: heavy JPEG compression, derived from the images' own
quantisation tables, defines the pack's slice and is measured there through the CLI, with the
derived-from-images note; the top change claim is the concept shift located there (the detector got
worse on heavily compressed media), which explains the overall drop and the inputs' change; the HTML
report shows 1:1 crops of the native pixels beside it.

Data: the real images of :mod:`tests.service.audits.test_image_audit` (LFW faces, their mirror images,
five sample photos). SYNTHETIC: a share of them is saved as JPEG quality 20 (heavy), the others
at quality 92; the benchmark has 30 % heavy, production 50 %. A simulated detector is right 85 %
of the time, 35 % on production's heavy images (labels real/fake are seeded draws).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.service.audits.test_image_audit_deepfake import build_set as build_jpeg_set

pytestmark = pytest.mark.slow  # every test here takes seconds: make test-fast skips them


@pytest.fixture(scope="module")
def zips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("deepfake_audit")
    (folder / "bench.zip").write_bytes(build_jpeg_set(1, 0.3, 0.85, accuracy=0.85, heavy_quality=20))
    (folder / "prod.zip").write_bytes(build_jpeg_set(2, 0.5, 0.35, accuracy=0.85, heavy_quality=20))
    return folder


def test_cli_audit_measures_heavy_compression_derived_from_the_tables(zips, tmp_path):
    out, page = tmp_path / "r.json", tmp_path / "r.html"
    res = subprocess.run([sys.executable, "-m", "service.cli", "audit", "--benchmark", str(zips / "bench.zip"),
                          "--production", str(zips / "prod.zip"), "--domain", "deepfake",
                          "--json", str(out), "--html", str(page), "--thumbnails"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=600,
                         env={**os.environ, "DO_NOT_TRACK": "1", "CONTEXTSHIFT_DATA_DIR": str(tmp_path / "d"),
                              "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])})
    assert res.returncode in (0, 1) and out.exists(), res.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["production"]["derived_context"]["compression"]["from"] == "img_jpeg_quality"
    heavy = next(s for s in result["slices"] if s["name"] == "heavy_compression")
    # the planted images, found from the pixels' tables: 30 % and 50 % of 205, seeded
    assert 40 <= heavy["n_benchmark"] <= 80 and 80 <= heavy["n_production"] <= 125
    assert heavy["production_value"] < heavy["benchmark_value"] - 0.3 and heavy["p_value_adjusted"] < 1e-6
    changes = [lim for lim in result["limitations"] if lim["claim"] == "change"]
    assert changes[0]["kind"] == "concept_shift" and "compression" in changes[0]["key"], [c["key"] for c in changes]
    assert [c["key"] for c in changes if c["key"] == "concept_shift:all"] == []  # explained, not restated
    html = page.read_text()
    assert "Derived from the images" in html and "compression (from img_jpeg_quality" in res.stdout
    # the compression finding shows 1:1 crops of native pixels (lossless, 64 px) beside its thumbnails
    top = re.search(r'id="top-limitation">.*?</div>\s*</div>', html, re.S).group(0)
    crops = re.findall(r'<div class="thumbs native"[^>]*>(.*?)</div>', top, re.S)
    assert crops and 1 <= crops[0].count('src="data:image/png;base64,') <= 4
