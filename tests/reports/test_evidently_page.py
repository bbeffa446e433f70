"""The Evidently companion page: its inline JSON is escaped for script context (stored XSS),
and it covers what the audit compares (inputs, contexts, model outputs, labels)."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from reports.evidently_page import UnsafePage, escape_inline_json

PAYLOAD = "</script><script>alert(1)</script>\u2028<!-- & -->"


def _page(info: dict, graphs: dict) -> str:
    """A page shaped like Evidently's ``file_html_template``, with unescaped data as Evidently writes it."""
    return ("<!DOCTYPE html>\n<html><head><style>p{}</style>\n        <script>\n"
            f"    var metric_0a1b = {json.dumps(info)};\n"
            f"    var additional_graphs_metric_0a1b = {json.dumps(graphs)};\n</script>\n    </head>\n"
            "<body><div id=\"root_metric_0a1b\"></div><script>var global = globalThis</script>"
            "<script>window.drawDashboard(metric_0a1b)</script></body></html>")


def _data(page: str) -> tuple[str, str]:
    m = re.search(r"var metric_0a1b = ([^\n]*);\n\s*var additional_graphs_metric_0a1b = ([^\n]*);\n</script>", page)
    return m.group(1), m.group(2)


def test_payloads_cannot_end_the_script_and_the_data_is_unchanged():
    info = {"name": "Report", "widgets": [{"title": PAYLOAD, "params": {"x": [PAYLOAD, "a<b>c&d", 1.5]}}]}
    graphs = {PAYLOAD: {"y": [1, 2]}}
    raw = _page(info, graphs)
    assert raw.count("</script>") > 3  # the unescaped page is broken by the payload
    safe = escape_inline_json(raw)
    info_text, graphs_text = _data(safe)
    for text in (info_text, graphs_text):
        assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(info_text) == info and json.loads(graphs_text) == graphs
    assert safe.count("</script>") == 3  # only the page's own scripts end


def test_the_rest_of_the_page_is_untouched():
    raw = _page({"name": "plain"}, {})
    assert escape_inline_json(raw) == raw


@pytest.mark.parametrize("page", [
    "<html><script>var x = 1;</script></html>",  # no data block: cannot be checked, so refused
    _page({"a": 1}, {}) + _page({"b": 2}, {}),  # two blocks
    _page({"a": 1}, {}).replace('{"a": 1}', '{"a": 1} + alert(1)'),  # not JSON
])
def test_pages_that_cannot_be_checked_are_refused(page):
    with pytest.raises(UnsafePage):
        escape_inline_json(page)


@pytest.mark.slow
def test_real_evidently_page_with_hostile_names_is_escaped(tmp_path):
    pytest.importorskip("evidently")
    from reports.evidently_page import write_evidently_page

    rng = np.random.default_rng(0)
    column = "size" + PAYLOAD
    bench = pd.DataFrame({column: rng.normal(0, 1, 200), "site": rng.choice(["a", PAYLOAD], 200)})
    prod = pd.DataFrame({column: rng.normal(1, 1, 200), "site": rng.choice(["a", PAYLOAD, "b"], 200)})
    out = write_evidently_page(bench, prod, numerical_columns=[column], categorical_columns=["site"],
                               path=tmp_path / "e.html", max_rows=200)
    text = out.read_text(encoding="utf-8")
    assert "<script>alert(1)" not in text and "\\u003c/script\\u003e" in text


@pytest.mark.slow
def test_companion_covers_contexts_outputs_and_labels():
    pytest.importorskip("evidently")
    from audit.roles import infer_roles
    from domains.examples import make_example
    from domains.loader import load_builtin
    from service.audits.local import audit_frames

    pack = load_builtin("deepfake")
    bench, prod = make_example("deepfake", n_benchmark=300, n_production=300, shift="planted", random_state=1)
    contexts = [c.name for c in pack.context]
    outcome = audit_frames(bench, prod, pack=pack, options={"evidently_companion": True, "budget": 50},
                           benchmark_roles=infer_roles(bench.columns, context_columns=contexts),
                           production_roles=infer_roles(prod.columns, context_columns=contexts))
    data = json.loads(re.search(r"var metric_[0-9a-f]+ = ([^\n]*);\n", outcome.companion_html).group(1))
    compared = set(re.findall(r'"column_name": "([^"]*)"', json.dumps(data)))  # the drift table's rows
    assert {"compression", "generator", "age_group", "blur", "prediction", "score", "label"} <= compared
    assert not {"id", "emb_0"} & compared  # row ids and embeddings are not distributions to compare
