"""Small charts as inline SVG strings: slice metrics with CIs, class priors with CIs, top drifted
features. matplotlib is imported lazily and used through ``matplotlib.figure.Figure`` with the
SVG canvas (no pyplot, no global backend state: the non-GUI Agg/SVG path, safe in a server).

Every SVG is cleaned for inline use: no XML header, no metadata, no clip paths (so no
``url(...)``), no namespace URLs; text is kept as ``<text>`` (``svg.fonttype = none``), which
matplotlib XML-escapes. Labels are shortened and ``$`` is escaped so a user string is never
parsed as mathtext. A chart that fails or looks unsafe is replaced by an empty string.
"""
from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, cast

from reports.formatting import metric_label, shorten
from reports.result import PriorEstimate, ShiftTest, SliceRecord

__all__ = ["slice_chart", "prior_chart", "drift_chart", "clean_svg", "wrap_label"]

BLUE, ORANGE, RED, GREY, INK, GREEN = "#2563eb", "#ea580c", "#dc2626", "#9ca3af", "#1f2937", "#047857"
WRAP_WIDTH, WRAP_LINES = 34, 4  # slice labels wrap instead of being cut (a 4-line cap bounds odd names)
_RC = {
    "svg.fonttype": "none", "svg.hashsalt": "contextshift", "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"], "font.size": 9, "axes.edgecolor": "#d1d5db", "axes.linewidth": 0.8,
    "axes.labelcolor": INK, "xtick.color": "#4b5563", "ytick.color": INK, "axes.spines.top": False,
    "axes.spines.right": False, "svg.image_inline": True,
}
# Checked on every tag (text between tags is XML-escaped by matplotlib, so it cannot hold markup).
_UNSAFE_TAG = re.compile(r"^<\s*/?\s*(script|style|foreignobject|iframe|image|a)\b|javascript:|\son\w+\s*=|"
                         r"(?:href|src)\s*=\s*(?![\"']?#)|url\(|@import", re.IGNORECASE)


def _label(text, limit: int = 38) -> str:
    return shorten(text, limit).replace("$", r"\$")


def wrap_label(text, width: int = WRAP_WIDTH, max_lines: int = WRAP_LINES) -> str:
    """A label over several lines rather than cut with "…" (only beyond ``max_lines`` lines)."""
    lines = textwrap.wrap(shorten(text, width * max_lines), width=width, break_long_words=True,
                          break_on_hyphens=False) or [""]
    return "\n".join(lines).replace("$", r"\$")


def clean_svg(svg: str) -> str:
    """Make matplotlib's SVG fit for inlining in HTML; ``""`` if anything unsafe remains."""
    svg = svg[svg.find("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.DOTALL)
    svg = re.sub(r"<clipPath\b.*?</clipPath>", "", svg, flags=re.DOTALL)
    svg = re.sub(r'\s+clip-path="url\(#[^")]*\)"', "", svg)
    svg = re.sub(r'\s+xmlns(?::\w+)?="[^"]*"', "", svg)
    svg = re.sub(r'<style type="text/css">.*?</style>', "", svg, flags=re.DOTALL)  # page CSS has the rule
    referenced = set(re.findall(r'href="#([^"]+)"', svg))
    svg = re.sub(r'\s+id="([^"]*)"', lambda m: m.group(0) if m.group(1) in referenced else "", svg)
    svg = re.sub(r"<defs>\s*</defs>", "", svg)
    svg = re.sub(r"\n\s+", "\n", svg)
    svg = svg.replace("<svg ", '<svg role="img" ', 1)
    if any(_UNSAFE_TAG.search(tag) for tag in re.findall(r"<[^>]*>", svg)):
        return ""
    return svg.strip()


def _render(draw, width: float, height: float, title: str) -> str:
    try:
        # lazy: Matplotlib costs ~0.3 s and only charts need it; a report renders without it
        import matplotlib
        from matplotlib.figure import Figure
        with matplotlib.rc_context(cast(Any, _RC)):  # its stubs type the keys as a Literal of every rc name
            fig = Figure(figsize=(width, height), layout="constrained")
            draw(fig.subplots())
            buffer = io.StringIO()
            fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    except Exception:  # a chart must never break the report; the tables carry the same numbers
        return ""
    svg = clean_svg(buffer.getvalue())
    return svg.replace('role="img"', f'role="img" aria-label="{_attr(title)}"', 1) if svg else ""


def _attr(text: str) -> str:
    return (text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;"))


def _interval(ax, y, value, bounds, colour, marker, label):
    lo, hi = bounds or (None, None)
    if value is None:
        return
    if lo is not None and hi is not None:
        ax.errorbar([value], [y], xerr=[[max(value - lo, 0)], [max(hi - value, 0)]], fmt=marker, color=colour,
                    ecolor=colour, elinewidth=1.6, capsize=2.5, markersize=5, label=label)
    else:
        ax.plot([value], [y], marker, color=colour, markersize=5, label=label)


def _legend(ax, weak: bool, production: bool, overall: bool) -> None:
    from matplotlib.lines import Line2D  # lazy, as in _render
    handles = [Line2D([], [], marker="o", color=BLUE, linestyle="none", markersize=5, label="benchmark")]
    if weak:
        handles.append(Line2D([], [], marker="o", color=RED, linestyle="none", markersize=5,
                              label="significantly weaker than overall"))
    if production:
        handles.append(Line2D([], [], marker="s", color=ORANGE, linestyle="none", markersize=5,
                              label="production (labelled)"))
    if overall:
        handles.append(Line2D([], [], color=GREY, linestyle="--", linewidth=1, label="overall (benchmark)"))
    ax.figure.legend(handles=handles, loc="outside upper left", fontsize=8, frameon=False, ncols=len(handles),
                     handletextpad=0.3, columnspacing=1.2)


def _slice_label(s: SliceRecord) -> str:
    label = wrap_label(s.title or s.name)
    if s.benchmark_value is None:
        label += "\n(production only)" if s.production_value is not None else "\n(not measured)"
    return label


def slice_chart(slices: Sequence[SliceRecord], *, overall_value: float | None = None, metric: str = "metric",
                highlight: Sequence[str] = (), max_slices: int = 20) -> str:
    """Forest plot: each slice's benchmark metric (and production metric, when labelled) with
    its 95 % CI against the overall benchmark value; slices named in ``highlight`` in red.

    Every slice gets a row: one measured only in production is drawn with its production point
    and marked "(production only)"; one measured nowhere is listed as "(not measured)".
    Labels wrap over up to four lines instead of being cut."""
    rows = list(slices[:max_slices])
    if not any(s.benchmark_value is not None or s.production_value is not None for s in rows):
        return ""
    marked = set(map(str, highlight))
    labels = [_slice_label(s) for s in rows]
    heights = [0.22 + 0.16 * label.count("\n") for label in labels]  # inches per row, by its lines
    centres, top = [], 0.0
    for h in heights:
        centres.append(-(top + h / 2))
        top += h

    def draw(ax):
        for s, y in zip(rows, centres):
            weak = s.name in marked
            both = s.production_value is not None and s.benchmark_value is not None
            _interval(ax, y + (0.05 if both else 0), s.benchmark_value, s.benchmark_ci, RED if weak else BLUE, "o",
                      None)
            _interval(ax, y - (0.05 if both else 0), s.production_value, s.production_ci, ORANGE, "s", None)
        ax.set_yticks(centres, labels)
        for tick, s in zip(ax.get_yticklabels(), rows):
            tick.set_color(RED if s.name in marked else INK)
            tick.set_linespacing(1.05)
        if overall_value is not None:
            ax.axvline(overall_value, color=GREY, linestyle="--", linewidth=1)
        ax.set_ylim(-top - 0.05, 0.05)
        ax.set_xlabel(f"{metric_label(metric)} with 95 % CI")
        ax.grid(axis="x", color="#eef0f3", linewidth=0.8)
        ax.set_axisbelow(True)
        _legend(ax, any(s.name in marked for s in rows), any(s.production_value is not None for s in rows),
                overall_value is not None)

    return _render(draw, 10.0, 0.9 + top, f"{metric_label(metric)} per slice with 95% confidence intervals")


def prior_chart(benchmark_prior: Mapping[str, float | None], production_estimate: Mapping[str, PriorEstimate], *,
                max_classes: int = 20, observed: Mapping[str, float | None] | None = None) -> str:
    """Benchmark class shares (``label.benchmark_prior``) against the estimated production shares with their
    CIs (``label.production_prior_estimate``), and the observed production shares when production is labelled."""
    seen, bench = dict(observed or {}), dict(benchmark_prior)
    classes = list(production_estimate)
    classes.sort(key=lambda c: -abs((production_estimate[c].estimate or 0) - (bench.get(c) or 0)))
    classes = classes[:max_classes]
    if not classes:
        return ""

    def draw(ax):
        n = len(classes)
        observed_drawn: list[str] = []
        for i, c in enumerate(classes):
            y = n - 1 - i
            if bench.get(c) is not None:
                ax.plot([bench[c]], [y + (0.2 if seen else 0.12)], "o", color=BLUE, markersize=5,
                        label="benchmark" if i == 0 else None)
            est = production_estimate[c]
            _interval(ax, y - (0.02 if seen else 0.15), est.estimate, (est.ci_low, est.ci_high), ORANGE, "s",
                      "production estimate" if i == 0 else None)
            if seen.get(c) is not None:
                ax.plot([seen[c]], [y - 0.24], "D", color=GREEN, markersize=5, markerfacecolor="none",
                        label=None if observed_drawn else "production observed")
                observed_drawn.append(c)
        ax.set_yticks(range(n), [_label(c, 28) for c in reversed(classes)])
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.7, n - 0.3)
        ax.xaxis.set_major_formatter(lambda x, _: f"{100 * x:.0f} %")
        ax.set_xlabel("share of cases (95 % CI)")
        ax.grid(axis="x", color="#eef0f3", linewidth=0.8)
        ax.set_axisbelow(True)
        ax.figure.legend(loc="outside upper left", fontsize=8, frameon=False, ncols=3 if seen else 2)

    return _render(draw, 5.2, 0.9 + 0.3 * len(classes), "Class shares: benchmark versus production estimate")


def drift_chart(features: Sequence[ShiftTest], *, top: int = 15) -> str:
    """Effect sizes of the features with the largest effects; drifted ones in red, each
    feature's practical floor as a grey tick."""
    rows = [f for f in features if f.effect_size is not None]
    rows.sort(key=lambda f: (not f.drifted, -(f.effect_size or 0.0)))  # None filtered out above
    rows = rows[:top]
    if not rows:
        return ""

    def draw(ax):
        n = len(rows)
        ys = list(range(n - 1, -1, -1))
        values = [f.effect_size for f in rows]
        colours = [RED if f.drifted else "#93c5fd" for f in rows]
        ax.barh(ys, values, color=colours, height=0.6)
        for y, f in zip(ys, rows):
            floor = f.effect_floor
            if floor is not None:
                ax.plot([floor, floor], [y - 0.38, y + 0.38], color=INK, linewidth=1.2)
        ax.set_yticks(ys, [_label(f.name, 30) for f in rows])
        ax.set_ylim(-0.7, n - 0.3)
        ax.set_xlabel("effect size (bar) and practical floor (tick); red = drifted")
        ax.grid(axis="x", color="#eef0f3", linewidth=0.8)
        ax.set_axisbelow(True)

    return _render(draw, 6.4, 0.7 + 0.28 * len(rows), "Largest feature effect sizes")
