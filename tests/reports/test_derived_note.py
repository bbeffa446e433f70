"""The report's context section says which context values were derived from the images."""
from __future__ import annotations

import re

from reports import render_html


def derived(source: str) -> dict:
    return {"from": source, "extractor": "imagecontext.pixel_stats", "extractor_version": "2"}


def context_section(html: str) -> str:
    return re.search(r'<section id="context">.*?</section>', html, re.S).group(0)


def test_context_section_names_the_derived_contexts(audit):
    audit["benchmark"]["derived_context"] = {"illumination": derived("img_brightness")}
    audit["production"]["derived_context"] = {"illumination": derived("img_brightness"),
                                              "compression": derived("img_jpeg_quality")}
    section = context_section(render_html(audit))
    line = re.search(r'<p class="derived">(.*?)</p>', section).group(1)
    assert "imagecontext version 2" in line
    assert "illumination (from img_brightness, by imagecontext.pixel_stats) in benchmark and production" in line
    assert "compression (from img_jpeg_quality" in line and "in production." in line


def test_no_line_when_nothing_was_derived(audit):
    assert 'class="derived"' not in render_html(audit)
