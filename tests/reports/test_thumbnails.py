"""Thumbnails of real LFW faces inside the top limitations: on only when asked, seeded, bounded."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import reports.thumbnails as thumbs
from reports import ReportImages, render_html
from reports.report_images import NO_IMAGES, report_images
from reports.result import as_evidence
from reports.thumbnails import PER_LIMITATION, thumbnail_strips
from tests.imagecontext.images import encode, lfw_upscaled


@pytest.fixture(scope="module")
def production():
    """200 production rows: the LFW faces and their mirror images, with the fixture's contexts."""
    faces, _ = lfw_upscaled()
    images = [*faces, *(f[:, ::-1] for f in faces)]
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"fitzpatrick": rng.integers(1, 7, len(images)),
                          "clinical_site": rng.choice(["site_a", "site_e"], len(images))})
    return frame, [encode(x) for x in images]


def strips(audit, production, **kw):
    frame, encoded = production
    return thumbnail_strips(as_evidence(audit).limitations, frame, lambda i: encoded[i], seed=7, **kw)


def top_section(html: str) -> str:
    return re.search(r'<div class="top-lim" id="top-limitation">.*?</div>\s*</div>', html, re.S).group(0)


def test_report_with_thumbnails_of_real_faces(audit, production):
    found, note = strips(audit, production, domain="facial_expression")
    html = render_html(audit, images=ReportImages(thumbnails=found, thumbnail_note=note))
    assert len(html.encode()) < 2_000_000
    assert top_section(html).count("<img ") == PER_LIMITATION
    assert note is None and len(found) == 2  # the two change limitations that select rows
    assert html.count("<img ") == sum(len(v) for v in found.values())
    assert all(uri.startswith("data:image/jpeg;base64,") for v in found.values() for uri in v)


def test_rows_inside_the_limitation_and_seeded(audit, production):
    frame, encoded = production
    asked = []
    thumbnail_strips(as_evidence(audit).limitations, frame, lambda i: asked.append(i) or encoded[i], seed=7)
    assert asked and all(frame.loc[i, "fitzpatrick"] in (5, 6) or frame.loc[i, "clinical_site"] == "site_e"
                         for i in asked)
    assert strips(audit, production) == strips(audit, production)  # the same audit shows the same rows
    other = thumbnail_strips(as_evidence(audit).limitations, frame, lambda i: encoded[i], seed=8)[0]
    assert other != strips(audit, production)[0]


def test_none_when_off(audit):
    assert "<img " not in render_html(audit)


def test_medical_domain_refused_unless_explicitly_enabled(audit, production):
    found, note = strips(audit, production, domain="dermatology")
    assert found == {} and "patient data" in note
    html = render_html(audit, images=ReportImages(thumbnails=found, thumbnail_note=note))
    assert "<img " not in html and "patient data" in html
    assert strips(audit, production, domain="dermatology", medical_ok=True)[0]


def test_payload_capped_with_a_note(audit, production, monkeypatch):
    monkeypatch.setattr(thumbs, "MAX_PAYLOAD", 10_000)
    found, note = strips(audit, production)
    assert sum(len(u) for v in found.values() for u in v) <= 10_000
    assert 0 < sum(len(v) for v in found.values()) < 2 * PER_LIMITATION and "stopped" in note


def test_standing_limitations_about_image_rows_get_thumbnails_too(audit, production):
    # the example's standing slice selects on body_site and image_quality: give the rows those
    frame, encoded = production
    frame = frame.assign(body_site=np.where(np.arange(len(frame)) % 2 == 0, "head_neck", "trunk"),
                         image_quality="fair")
    evidence = as_evidence(audit)
    standing = next(lim for lim in evidence.limitations if lim.claim == "standing" and lim.definition)
    found, _ = thumbnail_strips(evidence.limitations, frame, lambda i: encoded[i], seed=7)
    assert len(found[standing.key]) == PER_LIMITATION
    html = render_html(audit, images=ReportImages(thumbnails=found))
    assert html.count("<img ") == sum(len(v) for v in found.values()) > 2 * PER_LIMITATION


def test_what_the_images_add_is_decided_before_rendering(audit, production):
    frame, encoded = production
    limitations = as_evidence(audit).limitations
    assert report_images(limitations, frame, None, thumbnails=False) is None  # nothing asked, no image columns
    unreadable = report_images(limitations, frame, None, thumbnails=True)
    assert unreadable.thumbnail_note == NO_IMAGES and not unreadable.thumbnails
    found = report_images(limitations, frame, lambda i: encoded[i], thumbnails=True, seed=7)
    assert {k: list(v) for k, v in found.thumbnails.items()} == strips(audit, production)[0]
    assert render_html(audit, images=found) == render_html(audit, images=ReportImages(thumbnails=strips(
        audit, production)[0]))
