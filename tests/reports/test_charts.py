"""Slice chart (every slice, wrapped labels), observed class shares, and the hand-drawn
distribution panels: complete, escaped, small."""
from __future__ import annotations

import re
from html import unescape

import numpy as np
import pandas as pd

from audit.pipeline.distributions import feature_distributions
from reports import charts
from reports.distribution_charts import distribution_note, histogram_svg
from reports.result import PriorEstimate, SliceRecord


def _texts(svg: str) -> list[str]:
    return [unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def test_slice_labels_wrap_instead_of_being_cut():
    names = ['body_site == "head_neck" and image_quality == "fair" and age_group == "65+"',
             "Unbelted occupants 65 and over, in side impacts at night"]
    slices = [SliceRecord(name=n, benchmark_value=0.6 + i / 10, benchmark_ci=[0.5, 0.9]) for i, n in enumerate(names)]
    svg = charts.slice_chart(slices, overall_value=0.8)
    text = " ".join(_texts(svg))
    assert "…" not in text
    for name in names:  # every word of every label is drawn, across lines
        assert all(word in text for word in name.split())


def test_every_slice_gets_a_row_and_production_only_ones_are_marked():
    slices = [SliceRecord(name="both", benchmark_value=0.8, benchmark_ci=[0.7, 0.9], production_value=0.7),
              SliceRecord(name="new population", production_value=0.69, production_ci=[0.63, 0.74]),
              SliceRecord(name="too small", n_production=3)]
    text = " ".join(_texts(charts.slice_chart(slices, overall_value=0.8)))
    assert "both" in text and "new population" in text and "too small" in text
    assert "(production only)" in text and "(not measured)" in text


def test_slice_chart_titles_are_preferred_and_the_cap_holds():
    slices = [SliceRecord(name=f"s{i}", title=f"Title {i}", benchmark_value=0.5) for i in range(50)]
    text = _texts(charts.slice_chart(slices, max_slices=30))
    assert "Title 29" in text and "Title 30" not in text and "s0" not in text


def test_prior_chart_shows_observed_shares_when_given():
    bench = {"alive": 0.9, "dead": 0.1}
    est = {"alive": PriorEstimate(estimate=0.85, ci_low=0.8, ci_high=0.9),
           "dead": PriorEstimate(estimate=0.15, ci_low=0.1, ci_high=0.2)}
    with_observed = charts.prior_chart(bench, est, observed={"alive": 0.84, "dead": 0.16})
    assert "production observed" in with_observed
    assert "production observed" not in charts.prior_chart(bench, est)


def _frames(n=2_000, seed=0):
    rng = np.random.default_rng(seed)
    b = pd.DataFrame({"age": rng.normal(40, 10, n), "site": rng.choice(["a", "b", "c"], n)})
    p = pd.DataFrame({"age": rng.normal(60, 12, n), "site": rng.choice(["a", "d", "<script>alert(1)</script>"], n)})
    return b, p


def test_numeric_panel_draws_both_sides_per_bin():
    b, p = _frames()
    summary = feature_distributions(b, p, ["age"])["age"]
    svg = histogram_svg(summary)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("<rect") == 2 * (len(summary["edges"]) - 1)
    assert len(svg) < 8_000


def test_categorical_panel_escapes_category_names_and_pools_the_rest():
    b, p = _frames()
    svg = histogram_svg(feature_distributions(b, p, ["site"])["site"])
    assert "<script" not in svg and "&lt;script&gt;" in svg
    pooled = histogram_svg(feature_distributions(b, p, ["site"], max_categories=3)["site"])
    assert "(other)" in " ".join(_texts(pooled))  # 5 categories, 3 shown
    assert len(svg) < 8_000


def test_panels_skip_unusable_summaries():
    assert histogram_svg({}) == "" and histogram_svg(None) == ""
    assert histogram_svg({"type": "numeric", "edges": [0, 1], "benchmark": [1, 2], "production": [1]}) == ""
    assert histogram_svg({"type": "categorical", "categories": []}) == ""


def test_note_says_what_the_panel_leaves_out():
    note = distribution_note({"below": {"benchmark": 2, "production": 0}, "missing": {"benchmark": 0, "production": 5}})
    assert "2 benchmark / 0 production rows below" in note and "5 production rows missing" in note
    assert distribution_note({}) == ""


def test_docstring_examples_hold():
    import doctest

    import audit.pipeline.distributions
    import reports.distribution_charts
    for module in (reports.distribution_charts, audit.pipeline.distributions):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0
