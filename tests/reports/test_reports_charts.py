"""Inline SVG charts: small, clean (no URLs, no scripts), robust to hostile labels and empty data."""
from __future__ import annotations

import pytest

from reports import charts
from reports.result import SliceRecord, as_evidence


def _check(svg: str) -> None:
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    lowered = svg.lower()
    for bad in ("<script", "url(", "http:", "https:", "<?xml", "<!doctype", "<metadata", "@import", "<style"):
        assert bad not in lowered
    assert len(svg) < 60_000


def test_three_charts_from_the_example(audit):
    evidence = as_evidence(audit)
    _check(charts.slice_chart(evidence.slices, overall_value=0.86, metric="sensitivity",
                              highlight=["Fitzpatrick V–VI"]))
    _check(charts.prior_chart(evidence.label.benchmark_prior, evidence.label.production_prior_estimate))
    _check(charts.drift_chart(evidence.covariate.features))


def test_hostile_labels_are_escaped_text(payloads):
    slices = [SliceRecord(name=p, benchmark_value=0.5 + i / 20, benchmark_ci=[0.4, 0.9])
              for i, p in enumerate(payloads)]
    svg = charts.slice_chart(slices, overall_value=0.7, highlight=[payloads[0]])
    _check(svg)
    assert "&lt;script&gt;" in svg


@pytest.mark.parametrize("call", [
    lambda: charts.slice_chart([]), lambda: charts.slice_chart([SliceRecord(name="x", benchmark_value=None)]),
    lambda: charts.prior_chart({}, {}), lambda: charts.drift_chart([]),
])
def test_empty_inputs_give_no_chart(call):
    assert call() == ""


def test_long_inputs_are_capped(huge_audit):
    svg = charts.slice_chart(as_evidence(huge_audit).slices, overall_value=0.86)
    _check(svg)
    assert svg.count("<text") < 80


def test_clean_svg_rejects_anything_active():
    assert charts.clean_svg('<svg><a href="https://x"><text>x</text></a></svg>') == ""
    assert charts.clean_svg('<svg onload="alert(1)"></svg>') == ""
    assert charts.clean_svg('<svg><use xlink:href="#m1"/></svg>').startswith("<svg")
