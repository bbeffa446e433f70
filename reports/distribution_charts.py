"""Small-multiple histograms of drifted features, drawn from the aggregates in
``covariate.distributions`` (see ``service/audits/pipeline/distributions.py``), never from rows.

Hand-written SVG rather than matplotlib: a panel is 2–4 kB instead of ~20 kB, so a report with
a dozen drifted features on wide data stays far under 1 MB, and nothing heavy is imported.
Every user string (category names) is XML-escaped here; numbers are formatted by
:mod:`reports.formatting`. Shares are per side (a bar is the share of that dataset's non-missing
rows), so datasets of different sizes compare directly. A summary stays an open mapping in the
AuditResult (``covariate.distributions``), which the model does not check, so its numbers are checked here.

>>> d = {"type": "numeric", "edges": [0, 1, 2], "benchmark": [3, 1], "production": [1, 3],
...      "n": {"benchmark": 4, "production": 4}}
>>> svg = histogram_svg(d)
>>> svg.startswith("<svg") and svg.count("<rect") == 4
True
"""
from __future__ import annotations

from collections.abc import Mapping
from html import escape

from reports.formatting import fmt_share, fmt_value, shorten
from reports.result.base import finite

__all__ = ["histogram_svg", "distribution_note"]

BLUE, ORANGE, INK, MUTED, LINE = "#2563eb", "#ea580c", "#1f2937", "#6b7280", "#d1d5db"
WIDTH, PLOT_H, PAD_L, PAD_R, PAD_T, PAD_B = 340, 110, 40, 10, 8, 26
ROW_H, LABEL_W = 18, 120


def _amount(value) -> float | None:
    """A count or bin edge of the payload as a finite float; ``None`` when it is anything else."""
    value = finite(value)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _counts(d: Mapping, side: str) -> list[float]:
    values = d.get(side)
    if not isinstance(values, (list, tuple)):
        return []
    return [max(_amount(v) or 0.0, 0.0) for v in values]


def _shares(d: Mapping, side: str) -> list[float]:
    counts = _counts(d, side)
    extra = sum(max(_amount((d.get(k) or {}).get(side)) or 0.0, 0.0) for k in ("below", "above", "other")
                if isinstance(d.get(k), Mapping))
    total = sum(counts) + extra
    return [c / total for c in counts] if total > 0 else [0.0] * len(counts)


def _text(x: float, y: float, text: str, *, anchor: str = "start", size: int = 10, colour: str = MUTED) -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{colour}" text-anchor="{anchor}">'
            f"{escape(text)}</text>")


def _numeric(d: Mapping) -> str:
    amounts = [_amount(e) for e in d.get("edges") or []]
    edges = [e for e in amounts if e is not None]
    bench, prod = _shares(d, "benchmark"), _shares(d, "production")
    k = len(amounts) - 1
    if k < 1 or len(edges) != len(amounts) or len(bench) != k or len(prod) != k:
        return ""
    top = max(bench + prod) or 1.0
    step = (WIDTH - PAD_L - PAD_R) / k
    parts = []
    for i in range(k):
        x = PAD_L + i * step
        for share, colour, offset in ((bench[i], BLUE, 0.0), (prod[i], ORANGE, step / 2)):
            h = PLOT_H * share / top
            parts.append(f'<rect x="{x + offset + 0.5:.1f}" y="{PAD_T + PLOT_H - h:.1f}" '
                         f'width="{max(step / 2 - 1, 0.5):.1f}" '
                         f'height="{h:.1f}" fill="{colour}" fill-opacity="0.75"/>')
    base = PAD_T + PLOT_H
    parts.append(f'<line x1="{PAD_L}" y1="{base}" x2="{WIDTH - PAD_R}" y2="{base}" stroke="{LINE}"/>')
    parts.append(_text(PAD_L - 4, PAD_T + 9, fmt_share(top), anchor="end"))
    parts.append(_text(PAD_L - 4, base, "0 %", anchor="end"))
    for x, value, anchor in ((PAD_L, edges[0], "start"), (PAD_L + k / 2 * step, edges[0] + (edges[-1] - edges[0]) / 2,
                                                         "middle"), (WIDTH - PAD_R, edges[-1], "end")):
        parts.append(_text(x, base + 14, fmt_value(float(value)), anchor=anchor))
    return _svg(WIDTH, base + PAD_B - 6, parts, "Histogram: benchmark (blue) and production (orange) shares per bin")


def _categorical(d: Mapping) -> str:
    categories = [str(c) for c in d.get("categories") or []]
    bench, prod = _shares(d, "benchmark"), _shares(d, "production")
    given = d.get("other")
    other = given if isinstance(given, Mapping) else {}
    if any((_amount(other.get(side)) or 0) > 0 for side in ("benchmark", "production")):
        totals = {side: sum(_counts(d, side)) + (_amount(other.get(side)) or 0) for side in ("benchmark", "production")}
        categories.append("(other)")
        bench.append((_amount(other.get("benchmark")) or 0) / totals["benchmark"] if totals["benchmark"] else 0.0)
        prod.append((_amount(other.get("production")) or 0) / totals["production"] if totals["production"] else 0.0)
    if not categories or len(bench) != len(categories) or len(prod) != len(categories):
        return ""
    top = max(bench + prod) or 1.0
    span = WIDTH - LABEL_W - 46
    parts = []
    for i, (name, b, p) in enumerate(zip(categories, bench, prod)):
        y = PAD_T + i * ROW_H
        parts.append(f"<g><title>{escape(name)}</title>"
                     + _text(LABEL_W - 6, y + 12, shorten(name, 20), anchor="end", colour=INK) + "</g>")
        for share, colour, dy in ((b, BLUE, 2), (p, ORANGE, 9)):
            parts.append(f'<rect x="{LABEL_W}" y="{y + dy}" width="{max(span * share / top, 0.5):.1f}" height="6" '
                         f'fill="{colour}" fill-opacity="0.8"/>')
        parts.append(_text(LABEL_W + span + 4, y + 12, f"{fmt_share(b)} → {fmt_share(p)}", size=9))
    return _svg(WIDTH, PAD_T + len(categories) * ROW_H + 4, parts,
                "Category shares: benchmark (blue) and production (orange)")


def _svg(width: float, height: float, parts: list[str], title: str) -> str:
    return (f'<svg role="img" aria-label="{escape(title)}" viewBox="0 0 {width} {height:.0f}" width="{width}" '
            f'height="{height:.0f}" font-family="system-ui, sans-serif">' + "".join(parts) + "</svg>")


def histogram_svg(summary: Mapping) -> str:
    """One panel for one column's summary (numeric bins or categories); ``""`` if unusable."""
    if not isinstance(summary, Mapping):
        return ""
    kind = summary.get("type")
    if kind == "numeric":
        return _numeric(summary)
    if kind == "categorical":
        return _categorical(summary)
    return ""


def distribution_note(summary: Mapping) -> str:
    """What the panel leaves out: rows outside the binned range and missing values."""
    notes = []
    for key, what in (("below", "below the range shown"), ("above", "above the range shown"),
                      ("missing", "missing")):
        given = summary.get(key)
        part = given if isinstance(given, Mapping) else {}
        b, p = int(_amount(part.get("benchmark")) or 0), int(_amount(part.get("production")) or 0)
        if b or p:
            notes.append(f"{b:,} benchmark / {p:,} production rows {what}")
    return "; ".join(notes)
