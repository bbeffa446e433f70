"""Every skin-tone finding states the images' brightness and cast beside it, as ITA groups."""
from __future__ import annotations

import numpy as np
import pandas as pd

from reports import ReportImages, render_html
from reports.result import as_evidence
from reports.skin_context import is_skin_tone_definition, skin_tone_note, skin_tone_notes


def production(n=400, seed=0, dark_in_slice=True):
    rng = np.random.default_rng(seed)
    tone = rng.integers(1, 7, n)
    dark = np.isin(tone, [5, 6])
    brightness = rng.normal(55, 5, n) - (25 if dark_in_slice else 0) * dark
    return pd.DataFrame({"fitzpatrick": tone, "clinical_site": "site_a", "img_brightness": brightness,
                         "img_cast_b": rng.normal(8, 2, n), "skin_confidence": rng.uniform(0.3, 0.9, n),
                         "skin_missing": np.where(rng.random(n) < 0.1, "dim", None)})


def test_definitions_by_skin_tone_are_recognised():
    assert is_skin_tone_definition("skin_tone in [5, 6]")
    assert is_skin_tone_definition('fitzpatrick in [5, 6] and gender == "female"')
    assert not is_skin_tone_definition("illumination == 'dim'") and not is_skin_tone_definition(None)


def test_note_states_brightness_and_cast_inside_and_elsewhere():
    frame = production()
    note = skin_tone_note("fitzpatrick in [5, 6]", frame)
    inside = frame[frame.fitzpatrick >= 5].img_brightness.median()
    assert "ITA group" in note and "not a Fitzpatrick type" in note
    assert f"{inside:.0f} inside" in note and "colour cast" in note
    share = frame.skin_missing.notna().mean()
    assert "markedly darker" in note and f"{share:.0%} of production rows have no skin tone (mostly dim)" in note
    # the same skin tones under even light: no warning about lighting
    assert "markedly darker" not in skin_tone_note("fitzpatrick in [5, 6]", production(dark_in_slice=False))


def test_no_note_without_image_columns():
    assert skin_tone_note("fitzpatrick in [5, 6]", production().drop(columns=["img_brightness"])) is None


def test_report_shows_the_note_beside_the_skin_tone_limitation(audit):
    evidence = as_evidence(audit)
    notes = skin_tone_notes(evidence.limitations, production())
    skin = next(lim for lim in evidence.limitations if lim.definition == "fitzpatrick in [5, 6]")
    assert set(notes) == {skin.key}
    html = render_html(audit, images=ReportImages(notes=notes))
    assert html.count('<div class="image-note">') == 1 and "Brightness (median L*)" in html
