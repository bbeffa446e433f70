"""The Markdown "Model limitations" section for model cards."""
from __future__ import annotations

import re

import pytest

from domains import PLANTED
from reports import conclude, rank_limitations, render_markdown, verdict
from reports.markdown import md_escape


def test_section_has_heading_verdict_and_every_limitation(audit):
    limitations = rank_limitations(audit)
    text = render_markdown(conclude(audit, limitations))
    assert text.startswith("## Model limitations\n")
    assert f"**Verdict: {verdict(audit, limitations).severity} severity.**" in text
    for lim in limitations:
        assert f"{lim.rank}. **{lim.severity.capitalize()}" in text
        assert md_escape(lim.statement) in text
    weak = next(s for s in audit["slices"] if s["name"] == PLANTED["medical"].weak_slice)
    lo, hi = weak["benchmark_ci"]
    assert f"{weak['benchmark_value']:.2f} [{lo:.2f}, {hi:.2f}] (n={weak['metric_n_benchmark']})" in text
    assert audit["parameters"]["correction"] == "bh" and "Benjamini–Hochberg" in text


def test_numbered_items_follow_rank_order(audit):
    text = render_markdown(conclude(audit, rank_limitations(audit)))
    ranks = [int(m) for m in re.findall(r"^(\d+)\. \*\*", text, flags=re.MULTILINE)]
    assert ranks == list(range(1, len(ranks) + 1)) and len(ranks) == len(rank_limitations(audit))


def test_no_limitations_says_so():
    """Nothing tested: inconclusive, never "none severity" (the old wording) nor an all-clear."""
    text = render_markdown(conclude({}, []))
    assert "Nothing could be claimed" in text and "**Verdict: Inconclusive.**" in text
    assert "none severity" not in text and "should hold" not in text


def test_a_tested_audit_without_findings_says_no_change():
    audit = {"covariate": {"features": [{"name": "x", "method": "ks", "p_value": 0.6, "p_value_adjusted": 0.6,
                                         "effect_size": 0.01, "drifted": False, "status": "ok"}]}}
    text = render_markdown(conclude(audit, []))
    assert "**Verdict: no change detected.**" in text and "No limitation was found" in text
    assert "none severity" not in text


def test_hostile_names_cannot_inject_markup_or_links(hostile_audit):
    text = render_markdown(conclude(hostile_audit, rank_limitations(hostile_audit)))
    assert not re.search(r"(?<!\\)<(script|img|/script)", text)
    assert "](" not in text and "\\<script>" in text
    assert "\n" not in md_escape("two\nlines")


@pytest.mark.parametrize("level", [1, 3])
def test_heading_level(audit, level):
    assert render_markdown(conclude(audit, []), heading_level=level).startswith("#" * level + " Model limitations")
