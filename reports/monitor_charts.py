"""Tiny trend charts for the monitor page, drawn as inline SVG by hand (no matplotlib: a trend
page is rendered on every request and must stay cheap). Labels are XML-escaped here; values are
numbers formatted by this module, so the SVG holds no user markup."""
from __future__ import annotations

from collections.abc import Sequence
from html import escape

W, H, PAD_L, PAD_R, PAD_T, PAD_B = 640, 170, 46, 12, 14, 26
SEVERITY_Y = {"none": 0, "low": 1, "medium": 2, "high": 3}
COLOURS = {"none": "#067647", "low": "#175cd3", "medium": "#b54708", "high": "#b42318"}


def _x(i: int, n: int) -> float:
    return PAD_L + (W - PAD_L - PAD_R) * (i / max(n - 1, 1))


def _scale(lo: float, hi: float):
    span = (hi - lo) or 1.0
    return lambda v: PAD_T + (H - PAD_T - PAD_B) * (1 - (v - lo) / span)


def _frame(title: str, lo: float, hi: float, n: int, ticks: Sequence[tuple[float, str]] | None = None) -> list[str]:
    y = _scale(lo, hi)
    parts = [f'<svg role="img" viewBox="0 0 {W} {H}" width="100%" style="max-width:{W}px" '
             f'aria-label="{escape(title)}"><title>{escape(title)}</title>',
             f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{H - PAD_B}" stroke="#d1d5db"/>']
    for value, label in ticks or [(lo, f"{lo:.2f}"), ((lo + hi) / 2, f"{(lo + hi) / 2:.2f}"), (hi, f"{hi:.2f}")]:
        parts.append(f'<line x1="{PAD_L}" y1="{y(value):.1f}" x2="{W - PAD_R}" y2="{y(value):.1f}" '
                     f'stroke="#f3f4f6"/><text x="{PAD_L - 6}" y="{y(value) + 3:.1f}" font-size="10" '
                     f'text-anchor="end" fill="#4b5563">{escape(label)}</text>')
    for i in range(n):
        if n <= 12 or i % max(n // 12, 1) == 0:
            parts.append(f'<text x="{_x(i, n):.1f}" y="{H - 8}" font-size="10" text-anchor="middle" '
                         f'fill="#4b5563">{i + 1}</text>')
    return parts


def severity_chart(severities: Sequence[str]) -> str:
    """Verdict severity per run, as coloured dots on four levels."""
    n = len(severities)
    if n == 0:
        return ""
    parts = _frame("Verdict severity per run", 0, 3, n, [(v, k) for k, v in SEVERITY_Y.items()])
    y = _scale(0, 3)
    points = [(_x(i, n), y(SEVERITY_Y.get(s, 0))) for i, s in enumerate(severities)]
    if n > 1:
        parts.append('<polyline fill="none" stroke="#9ca3af" stroke-width="1" points="'
                     + " ".join(f"{a:.1f},{b:.1f}" for a, b in points) + '"/>')
    for (a, b), s in zip(points, severities):
        parts.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="4" fill="{COLOURS.get(s, "#9ca3af")}"/>')
    return "".join(parts) + "</svg>"


def line_chart(title: str, series: Sequence[tuple[str, str, Sequence[float | None]]], *,
               bands: Sequence[tuple[Sequence[float | None], Sequence[float | None]]] = (),
               reference: float | None = None) -> str:
    """Lines (name, colour, values per run) with optional CI bands and a dashed reference level."""
    values = [v for _, _, vs in series for v in vs if v is not None]
    if not values:
        return ""  # nothing measured yet: the page says so instead of drawing empty axes
    values += [v for lo, hi in bands for v in list(lo) + list(hi) if v is not None]
    if reference is not None:
        values.append(reference)
    n = max((len(vs) for _, _, vs in series), default=0)
    if not values or n == 0:
        return ""
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.08 or 0.05
    lo, hi = lo - pad, hi + pad
    y = _scale(lo, hi)
    parts = _frame(title, lo, hi, n)
    for (low, high), (_, colour, _) in zip(bands, series):
        for i, (a, b) in enumerate(zip(low, high)):
            if a is not None and b is not None:
                parts.append(f'<line x1="{_x(i, n):.1f}" y1="{y(a):.1f}" x2="{_x(i, n):.1f}" y2="{y(b):.1f}" '
                             f'stroke="{colour}" stroke-width="6" stroke-opacity="0.25"/>')
    if reference is not None:
        parts.append(f'<line x1="{PAD_L}" y1="{y(reference):.1f}" x2="{W - PAD_R}" y2="{y(reference):.1f}" '
                     'stroke="#6b7280" stroke-dasharray="4 3"/>')
    for i, (name, colour, vs) in enumerate(series):
        pts = [(_x(j, n), y(v)) for j, v in enumerate(vs) if v is not None]
        if len(pts) > 1:
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.8" points="'
                         + " ".join(f"{a:.1f},{b:.1f}" for a, b in pts) + '"/>')
        parts += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="2.6" fill="{colour}"/>' for a, b in pts]
        parts.append(f'<text x="{W - PAD_R}" y="{PAD_T + 10 + 12 * i}" font-size="10" text-anchor="end" '
                     f'fill="{colour}">{escape(name[:40])}</text>')
    return "".join(parts) + "</svg>"
