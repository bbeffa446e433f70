"""The Evidently companion page (slow: importing Evidently takes seconds)."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from reports.evidently_page import write_evidently_page


def _frames(n=300, seed=0):
    rng = np.random.default_rng(seed)
    benchmark = pd.DataFrame({"age": rng.normal(50, 10, n), "brightness": rng.uniform(size=n),
                              "site": rng.choice(["arm", "leg", "trunk"], n)})
    production = pd.DataFrame({"age": rng.normal(60, 10, n), "brightness": rng.uniform(size=n),  # synthetic shift
                               "site": rng.choice(["arm", "leg", "scalp"], n)})
    return benchmark, production


@pytest.mark.slow
def test_writes_a_drift_page(tmp_path):
    pytest.importorskip("evidently")
    benchmark, production = _frames()
    out = write_evidently_page(benchmark, production, numerical_columns=["age", "brightness"],
                               categorical_columns=["site"], path=tmp_path / "sub" / "evidently.html", max_rows=200)
    text = out.read_text(encoding="utf-8")
    assert out == tmp_path / "sub" / "evidently.html" and "<html" in text[:2000].lower()
    assert "age" in text and not (tmp_path / "sub" / ".evidently.html.tmp").exists()
    assert os.environ.get("DO_NOT_TRACK")


@pytest.mark.slow
def test_page_as_a_string():
    pytest.importorskip("evidently")
    import reports
    benchmark, production = _frames(n=120, seed=1)
    html = reports.evidently_page_html(benchmark, production, numerical_columns=["age"], categorical_columns=["site"])
    assert "<html" in html[:2000].lower() and "age" in html


@pytest.mark.parametrize("kwargs, error", [
    ({"numerical_columns": [], "categorical_columns": []}, ValueError),
    ({"numerical_columns": ["nope"], "categorical_columns": []}, ValueError),
])
def test_rejects_bad_columns(tmp_path, kwargs, error):
    benchmark, production = _frames()
    with pytest.raises(error):
        write_evidently_page(benchmark, production, path=tmp_path / "x.html", **kwargs)


def test_rejects_non_frames(tmp_path):
    _, production = _frames()
    with pytest.raises(TypeError):
        write_evidently_page([1, 2], production, numerical_columns=["age"], categorical_columns=[],
                             path=tmp_path / "x.html")
