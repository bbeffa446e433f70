"""The benchmark-series page: one self-contained, offline HTML file.

Same rules as the audit report (:mod:`reports.html`): no script, no external resource, Jinja2
with autoescape on, only aggregates. The progress chart is a small hand-built inline SVG: its
only text is numbers and fixed legend words, so nothing user-supplied ever enters markup.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from reports.formatting import shorten

__all__ = ["render_rounds_html", "progress_svg", "coverage_grid"]

ROUND_CAP, KEY_CAP, SHARE_CAP = 60, 40, 8
W, H, LEFT, RIGHT, TOP, BOTTOM = 680, 280, 46, 120, 16, 34
LINES = (("metric", "#2563eb", "", "primary metric"), ("cumulative", "#9ca3af", "4 3", "cumulative"),
         ("mer", "#ea580c", "", "MER"), ("vmer", "#dc2626", "2 2", "vMER"))


@lru_cache(maxsize=1)
def _environment():
    env = Environment(loader=FileSystemLoader(str(Path(__file__).with_name("templates"))),
                      autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["short"] = lambda text, limit=80: shorten(text, limit)
    env.filters["num"] = lambda v, d=2: "n/a" if v is None else f"{v:.{d}f}"
    env.filters["p"] = lambda v: "—" if v is None else ("< 0.001" if v < 0.001 else f"{v:.3f}")
    return env


def _xy(i: int, n: int, value: float) -> tuple[float, float]:
    span = W - LEFT - RIGHT
    x = LEFT + (span / 2 if n == 1 else span * i / (n - 1))
    return round(x, 1), round(TOP + (H - TOP - BOTTOM) * (1 - value), 1)


def progress_svg(rounds: Sequence[Mapping[str, Any]], threshold: float | None = None) -> str:
    """Metric, cumulative metric, MER and vMER per round with their CIs, as an inline SVG string."""
    n = len(rounds)
    if n == 0:
        return ""
    parts = [f'<svg role="img" viewBox="0 0 {W} {H}" width="{W}" height="{H}" aria-label="progress by round">']
    for tick in (0, 0.25, 0.5, 0.75, 1):
        _, y = _xy(0, 1, tick)
        parts.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y}" y2="{y}" stroke="#e5e7eb"/>'
                     f'<text x="{LEFT - 6}" y="{y + 4}" font-size="11" text-anchor="end" '
                     f'fill="#4b5563">{tick:.2f}</text>')
    if threshold is not None:
        _, y = _xy(0, 1, threshold)
        parts.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y}" y2="{y}" stroke="#067647" stroke-dasharray="6 4"/>')
    for i, r in enumerate(rounds):
        x, _ = _xy(i, n, 0)
        parts.append(f'<text x="{x}" y="{H - 12}" font-size="11" text-anchor="middle" fill="#4b5563">'
                     f'{int(r["number"])}</text>')
    for li, (field, colour, dash, label) in enumerate(LINES):
        values = [(i, r.get(field)) for i, r in enumerate(rounds)]
        points = [(i, e) for i, e in values if isinstance(e, Mapping) and e.get("value") is not None]
        if not points:
            continue
        path = " ".join("{},{}".format(*_xy(i, n, float(e["value"]))) for i, e in points)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash_attr}/>')
        for i, e in points:
            x, y = _xy(i, n, float(e["value"]))
            if e.get("ci_low") is not None and e.get("ci_high") is not None:
                _, y0 = _xy(i, n, float(e["ci_low"]))
                _, y1 = _xy(i, n, float(e["ci_high"]))
                parts.append(f'<line x1="{x}" x2="{x}" y1="{y0}" y2="{y1}" stroke="{colour}" stroke-width="1.5"/>')
            parts.append(f'<circle cx="{x}" cy="{y}" r="3" fill="{colour}"/>')
        ly = TOP + 8 + 18 * li
        parts.append(f'<line x1="{W - RIGHT + 12}" x2="{W - RIGHT + 30}" y1="{ly}" y2="{ly}" stroke="{colour}" '
                     f'stroke-width="2"{dash_attr}/><text x="{W - RIGHT + 36}" y="{ly + 4}" font-size="11" '
                     f'fill="#1f2937">{label}</text>')
    parts.append(f'<text x="{(W - RIGHT + LEFT) / 2}" y="{H - 1}" font-size="11" text-anchor="middle" '
                 f'fill="#4b5563">round</text></svg>')
    return "".join(parts)


def coverage_grid(rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Rows = planned slices (by key), columns = rounds; each cell ``{collected, planned, shade}``
    or None where the round answered no plan naming that slice."""
    keys: dict[str, str] = {}
    for r in rounds:
        for c in r.get("plan_coverage") or ():
            keys.setdefault(c["key"], c.get("slice") or c["key"])
    rows = []
    for key, name in list(keys.items())[:KEY_CAP]:
        cells: list[dict[str, Any] | None] = []
        for r in rounds:
            found = next((c for c in r.get("plan_coverage") or () if c["key"] == key), None)
            if found is None:
                cells.append(None)
                continue
            planned, got = int(found.get("planned") or 0), found.get("collected")
            ratio = 0.0 if got is None else (1.0 if planned == 0 else min(got / planned, 1.0))
            cells.append({"collected": got, "planned": planned, "shade": f"rgba(37,99,235,{0.06 + 0.34 * ratio:.2f})"})
        rows.append({"key": key, "name": name, "cells": cells})
    return {"rows": rows, "more": max(0, len(keys) - KEY_CAP)}


def render_rounds_html(series: Mapping[str, Any]) -> str:
    """The series page from ``SeriesSummary.to_dict()``."""
    rounds = list(series.get("rounds") or [])[-ROUND_CAP:]
    env = _environment()
    return env.get_template("rounds.html.j2").render(
        s=series, rounds=rounds, hidden=max(0, len(series.get("rounds") or []) - ROUND_CAP),
        chart=Markup(progress_svg(rounds, series.get("saturation_threshold"))), grid=coverage_grid(rounds),
        share_cap=SHARE_CAP)
