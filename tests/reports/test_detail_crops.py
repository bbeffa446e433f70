"""1:1 native crops beside a finding about fine detail: only there, the stored bytes unchanged,
rows from inside it, bounded, refused for patient images unless allowed."""
from __future__ import annotations

import base64
import io
import re

import numpy as np
import pandas as pd
import pytest
from PIL import Image

import reports.detail_crops as detail_crops
from imagecontext import decode, detail_crop
from reports import render_html
from reports.detail_crops import PER_LIMITATION, detail_strips
from reports.report_images import ReportImages
from reports.result import as_evidence
from tests.imagecontext.images import encode, photos

HEAVY = 'compression == "heavy"'


@pytest.fixture
def audit(audit):
    """The example audit with its new-clinic finding turned into a heavy-compression one."""
    for lim in audit["limitations"]:
        if lim.get("definition") == 'clinical_site == "site_e"':
            lim["definition"] = HEAVY
    return audit


@pytest.fixture(scope="module")
def production():
    """60 rows of real photos saved as JPEG (heavy: quality 20, else 92) and each one's stored crop."""
    rng = np.random.default_rng(0)
    images = list(photos().values())
    heavy = rng.random(60) < 0.4
    crops = []
    for i in range(60):
        decoded = decode(encode(images[i % len(images)], "JPEG", quality=20 if heavy[i] else 92)).rgb
        crops.append(encode(detail_crop(decoded)))  # PNG, as the image cache stores it
    frame = pd.DataFrame({"compression": np.where(heavy, "heavy", "light"), "fitzpatrick": rng.integers(1, 7, 60),
                          "clinical_site": "site_a"})
    return frame, crops


def found(audit, production, **kw):
    frame, crops = production
    return detail_strips(as_evidence(audit).limitations, frame, lambda i: crops[i], ("compression",), seed=3, **kw)


def test_crops_only_beside_findings_about_detail_and_unchanged(audit, production):
    frame, crops = production
    strips = found(audit, production)
    heavy = next(lim for lim in as_evidence(audit).limitations if lim.definition == HEAVY)
    assert list(strips) == [heavy.key]
    uris = strips[heavy.key]
    assert 1 <= len(uris) <= PER_LIMITATION
    for uri in uris:
        assert uri.startswith("data:image/png;base64,")
        data = base64.b64decode(uri.split(",", 1)[1])
        assert data in crops  # the stored bytes as they are: no re-encoding
        row = crops.index(data)
        assert frame.loc[row, "compression"] == "heavy"
        assert Image.open(io.BytesIO(data)).size == (64, 64)
    assert found(audit, production) == strips  # seeded


def test_patient_images_need_the_medical_option(audit, production):
    assert found(audit, production, domain="dermatology") == {}
    assert found(audit, production, domain="dermatology", medical_ok=True) != {}


def test_payload_is_bounded(audit, production, monkeypatch):
    monkeypatch.setattr(detail_crops, "MAX_PAYLOAD", 30_000)
    strips = found(audit, production)
    assert sum(len(u) for v in strips.values() for u in v) <= 30_000


def test_report_shows_the_crops_in_their_own_strip(audit, production):
    strips = found(audit, production)
    html = render_html(audit, images=ReportImages(crops=strips))
    native = re.findall(r'<div class="thumbs native"[^>]*>(.*?)</div>', html, re.S)
    assert len(native) == 1 and native[0].count("<img ") == len(next(iter(strips.values())))
    assert "image-rendering:pixelated" in html


def test_docstring_examples():
    import doctest

    result = doctest.testmod(detail_crops)
    assert result.attempted > 0 and result.failed == 0
