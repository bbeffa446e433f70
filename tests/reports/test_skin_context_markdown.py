"""The skin-tone note is in the Markdown report too, and reads the lesion surround's skin tone when
the photos have no face."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from reports import render_markdown
from reports.report_images import ReportImages
from reports.result import as_evidence
from reports.skin_context import skin_tone_note, skin_tone_notes
from tests.reports.test_skin_context import production


def test_markdown_states_the_note_under_the_skin_tone_finding(audit):
    evidence = as_evidence(audit)
    notes = skin_tone_notes(evidence.limitations, production())
    assert notes
    text = render_markdown(audit, images=ReportImages(notes=notes))
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "Skin tone here is an ITA group" in line)
    assert lines[at].startswith("   _") and re.match(r"\d+\. \*\*", lines[at - 1])
    assert "Skin tone here" not in render_markdown(audit)


def test_a_lesion_photo_reads_the_surround_not_its_empty_face_columns():
    n = 200
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"skin_tone": rng.choice(["light", "brown"], n), "img_brightness": rng.normal(60, 5, n),
                          "img_cast_b": rng.normal(8, 2, n),
                          "skin_confidence": 0.0, "skin_missing": "no_face",  # no face in a lesion photo
                          "skin_surround_confidence": rng.uniform(0.6, 0.95, n),
                          "skin_surround_missing": np.where(rng.random(n) < 0.2, "no_reference", None)})
    note = skin_tone_note('skin_tone in ["brown", "dark"]', frame)
    share = frame.skin_surround_missing.notna().mean()
    assert f"{share:.0%} of production rows have no skin tone (mostly no_reference)" in note
    assert "no_face" not in note and "(median) 0.00" not in note
    assert "markedly darker" not in note
    # darker skin darkens a lesion photo: the warning says so, and that the tone was read against the frame
    darker = frame.assign(img_brightness=np.where(frame.skin_tone == "brown", 45.0, 62.0))
    assert "darker skin alone darkens it" in skin_tone_note('skin_tone in ["brown", "dark"]', darker)

