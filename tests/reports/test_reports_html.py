"""The HTML report: well-formed, self-contained (nothing from the network), escaped, bounded size."""
from __future__ import annotations

import re
import time
from html.parser import HTMLParser

import pytest

from reports import plan_next_round, rank_limitations, render_html

ONE_MB = 1_000_000
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Collector(HTMLParser):
    """Records tags and attributes, and checks that non-void tags are closed in order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.attrs, self.stack, self.errors, self.text, self.css = [], [], [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}>, open: {self.stack[-3:]}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        (self.css if self.stack and self.stack[-1] == "style" else self.text).append(data)


def _parse(html: str) -> _Collector:
    parser = _Collector()
    parser.feed(html)
    parser.close()
    return parser


def _render(audit, budget=200):
    limitations = rank_limitations(audit)
    return render_html(audit, limitations, plan_next_round(audit, limitations, budget=budget, min_slice_size=30))


def assert_self_contained(html: str, *, trusted_text: bool = True) -> None:
    """No attribute, style or tag can load anything; with ``trusted_text`` (no hostile names in
    the audit) not even the text mentions a URL."""
    parsed = _parse(html)
    for tag, name, value in parsed.attrs:
        v = value.strip().lower()
        if name in ("src", "href", "xlink:href", "action", "formaction", "poster", "data", "srcset", "background"):
            assert v.startswith("#"), f"<{tag} {name}={value!r}> points outside the page"
        assert not name.startswith("on"), f"event handler attribute on <{tag}>"
        if name == "style":
            assert "url(" not in v and "@import" not in v
        if name == "content" and tag == "meta":
            assert "//" not in v
    assert not {"script", "link", "iframe", "object", "embed", "img", "base", "form", "frame"} & set(parsed.tags)
    css = " ".join(parsed.css).lower()
    assert "@import" not in css and "url(" not in css and "//" not in css and "@font-face" not in css
    if trusted_text:
        lowered = html.lower()
        assert "url(" not in lowered and "javascript:" not in lowered
        assert "http://" not in lowered and "https://" not in lowered


def test_report_parses_and_is_self_contained(audit):
    html = _render(audit)
    parsed = _parse(html)
    assert not parsed.errors and not parsed.stack
    assert html.lstrip().lower().startswith("<!doctype html>")
    assert_self_contained(html)
    assert parsed.tags.count("svg") == 3  # drift, priors, slices


def test_sections_come_in_the_specified_order(audit):
    html = _render(audit)
    order = ["verdict", "limitations", "covariate", "label", "context", "slices", "next-round", "parameters"]
    positions = [html.index(f'id="{section}"') for section in order]
    assert positions == sorted(positions)


def test_first_screen_answers_can_i_trust_the_model(audit):
    html = _render(audit)
    head = html[: html.index('id="covariate"')]
    assert "High severity" in head and "Do not rely on the benchmark score" in head
    assert "0.61 [0.52, 0.70]" in head and "n=212" in head  # the top limitation, with its CI and n
    text = " ".join(_parse(html).text)
    assert "Fitzpatrick V–VI" in text and 'imaging_modality == "smartphone"' in text


def test_every_limitation_statement_is_in_the_report(audit):
    limitations = rank_limitations(audit)
    text = " ".join(" ".join(_parse(render_html(audit, limitations)).text).split())
    for lim in limitations:
        assert lim.statement in text


def test_user_strings_are_escaped(hostile_audit):
    html = _render(hostile_audit)
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    parsed = _parse(html)
    assert not parsed.errors and not parsed.stack
    assert "img" not in parsed.tags and not any(name.startswith("on") for _, name, _ in parsed.attrs)
    assert "{{ 7*7 }}" in " ".join(parsed.text) and "49" not in " ".join(parsed.text).split()
    assert_self_contained(html, trusted_text=False)


def test_huge_audit_stays_under_one_megabyte(huge_audit):
    start = time.perf_counter()
    html = _render(huge_audit, budget=2000)
    elapsed = time.perf_counter() - start
    assert len(html.encode("utf-8")) < ONE_MB
    assert "more features not shown" in html and "more slices not shown" in html
    assert_self_contained(html)
    assert elapsed < 20


def test_huge_strings_are_shortened(audit):
    audit["slices"][0]["name"] = "n" * 200_000
    audit["covariate"]["features"][0]["name"] = "f" * 200_000
    html = _render(audit)
    assert len(html.encode()) < 200_000 and "nnnn…" in html


@pytest.mark.parametrize("audit_dict", [{}, {"status": "failed", "id": "a1"},
                                        {"slices": [{"name": "only name"}], "label": {"is_shift": None}}])
def test_sparse_audits_still_render(audit_dict):
    html = render_html(audit_dict, rank_limitations(audit_dict))
    parsed = _parse(html)
    assert not parsed.errors and "No limitation found" in html and 'id="next-round"' not in html
    assert_self_contained(html)


def test_no_chart_text_is_parsed_as_mathtext_or_markup(audit):
    audit["slices"][0]["name"] = r"$\frac{1$ <b>bold</b> & co"
    html = _render(audit)
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>" not in html
    assert re.search(r"\\\$\\frac|\$\\frac", html)
