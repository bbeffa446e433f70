"""The benchmark-series page: offline, escaped, bounded, with the chart, heat map and statements."""
from __future__ import annotations

import numpy as np
import pandas as pd

from domains import load_builtin
from reports.rounds_html import coverage_grid, progress_svg, render_rounds_html
from service.rounds.frames import round_table
from service.rounds.series import RoundInput, summarise_series

EVIL = '<script>alert("x")</script>'
ROLES = {"id": "id", "label": "label", "prediction": "prediction", "site": "context", "annotator_id": "annotator"}


def _summary(n_rounds=4, n=400, plan=True):
    rng = np.random.default_rng(0)
    inputs = []
    for k in range(n_rounds):
        acc = min(0.55 + 0.1 * k, 0.8)
        y = rng.choice(["a", "b"], n)
        pred = np.where(rng.random(n) < acc, y, np.where(y == "a", "b", "a"))
        frame = pd.DataFrame({"id": [f"{k}-{i}" for i in range(n)], "label": y, "prediction": pred,
                              "site": rng.choice([EVIL, "clinic"], n),
                              "annotator_id": np.where(rng.random(n) < 0.5, EVIL, "ann")})
        result = {"next_round": {"budget": 120, "min_slice_size": 30, "allocations": [
            {"slice": EVIL, "kind": "untested_context", "definition": f"site == '{EVIL}'", "n_to_label": 100},
            {"slice": "sample", "kind": "production_sample", "definition": None, "n_to_label": 20}]}}
        inputs.append(RoundInput(k + 1, f"ds{k}", EVIL, "au_x" if plan else None, round_table(frame, ROLES),
                                 result if plan and k else None))
    return summarise_series("s", "generic", load_builtin("generic"), inputs).to_dict()


def test_page_is_offline_and_escaped():
    html = render_rounds_html(_summary())
    assert "<script" not in html.lower() and "&lt;script&gt;" in html
    assert "http://" not in html and "https://" not in html and "<link" not in html and "<img" not in html
    assert html.count("<svg") == 1 and "Plan coverage" in html and "stalled" in html and "saturated" in html


def test_chart_and_grid_follow_the_rounds():
    summary = _summary()
    svg = progress_svg(summary["rounds"], 0.8)
    assert svg.count("<polyline") == 3  # metric, cumulative and MER (no validation column: no vMER)
    assert svg.count("<circle") == 3 * len(summary["rounds"])
    grid = coverage_grid(summary["rounds"])
    keys = [row["key"] for row in grid["rows"]]
    assert keys[0].startswith("untested_context:") and keys[1] == "production_sample:sample"
    first, later = grid["rows"][0]["cells"][0], grid["rows"][0]["cells"][1]
    assert first is None and later["planned"] == 100 and 0 < later["collected"] < 400
    assert grid["rows"][1]["cells"][1]["collected"] is None  # no definition: nothing to count


def test_page_stays_small_with_many_rounds():
    html = render_rounds_html(_summary(n_rounds=70, n=60, plan=False))
    assert len(html.encode()) < 1_000_000 and "earlier rounds are not shown" in html


def _noisy_summary():
    """Gains for two rounds, then a stall while three annotators agree less and less."""
    rng = np.random.default_rng(8)
    inputs = []
    for k, (acc, agree) in enumerate(((0.6, 0.97), (0.8, 0.97), (0.8, 0.6), (0.8, 0.55))):
        y = rng.choice(["a", "b", "c"], 500)
        pred = np.where(rng.random(500) < acc, y, np.where(y == "a", "b", "a"))
        rows = [(f"{k}-{i}", who, t if rng.random() < agree else rng.choice(["a", "b", "c"]), p)
                for i, (t, p) in enumerate(zip(y, pred)) for who in ("p", "q", "r")]
        frame = pd.DataFrame(rows, columns=["id", "annotator_id", "label", "prediction"])
        roles = {"id": "id", "annotator_id": "annotator", "label": "label", "prediction": "prediction"}
        inputs.append(RoundInput(k + 1, f"ds{k}", None, None, round_table(frame, roles)))
    return summarise_series("noisy", "generic", load_builtin("generic"), inputs).to_dict()


def test_page_states_the_online_levels_the_published_stall_and_label_noise():
    summary = _noisy_summary()
    assert summary["stalled"] and summary["label_noise"]
    html = render_rounds_html(summary)
    assert "Holm" not in html and "LORD++" in html and "never change" in html
    assert "label noise</span>" in html and "fell from" in html
    assert f"since round {summary['stalled_at']}" in html
    level = summary["rounds"][1]["improvement"]["level"]
    assert f"{level:.4f}" in html
