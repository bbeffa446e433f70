"""The monitor trend page: one self-contained, offline HTML file (same rules as the audit report).

No JavaScript, no external resources; Jinja2 autoescape on, so every user string (monitor,
slice, feature and finding text) is escaped by the template; only the SVG drawn by
:mod:`reports.monitor_charts` (numbers plus escaped labels) is marked safe.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from reports.formatting import shorten
from reports.monitor_charts import line_chart, severity_chart

RUN_CAP, ALERT_CAP, NAME_LIMIT = 200, 200, 80
BLUE, ORANGE, RED, GREEN, PURPLE = "#2563eb", "#ea580c", "#dc2626", "#067647", "#7c3aed"


@lru_cache(maxsize=1)
def _environment():
    env = Environment(loader=FileSystemLoader(str(Path(__file__).with_name("templates"))), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["short"] = lambda text, limit=NAME_LIMIT: shorten(text, limit)
    return env


def _safe(svg: str):
    return Markup(svg) if svg else ""


def _when(value: datetime | None) -> str:
    if value is None:
        return ""
    value = value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value
    return value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _value(block: dict | None, key: str = "value") -> float | None:
    return None if not block else block.get(key)


def _ci(block: dict | None, i: int) -> float | None:
    ci = (block or {}).get("ci") or [None, None]
    return ci[i] if len(ci) > i else None


def _charts(tested: list[Any]) -> dict[str, str]:
    summaries = [r.summary or {} for r in tested]
    metric = next((s.get("metric") for s in summaries if s.get("metric")), "metric")
    bench = next((s.get("benchmark_value") for s in summaries if s.get("benchmark_value") is not None), None)
    performance = line_chart(
        f"Production {metric} per run (benchmark dashed)",
        [("observed (labels)", GREEN, [_value(s.get("observed")) for s in summaries]),
         ("estimated (no labels)", PURPLE, [_value(s.get("estimated")) for s in summaries])],
        bands=[([_ci(s.get("observed"), 0) for s in summaries], [_ci(s.get("observed"), 1) for s in summaries]),
               ([_ci(s.get("estimated"), 0) for s in summaries], [_ci(s.get("estimated"), 1) for s in summaries])],
        reference=bench)
    shift = line_chart("Shift statistics per run",
                       [("classifier AUC", BLUE, [s.get("classifier_auc") for s in summaries]),
                        ("largest feature effect", ORANGE,
                         [(s.get("top_feature") or {}).get("effect_size") for s in summaries]),
                        ("share of features drifted", RED,
                         [(s.get("n_drifted_features") or 0) / s["n_features"] if s.get("n_features") else None
                          for s in summaries])])
    worst = line_chart("Gap of the worst slice per run (positive: slice worse than overall)",
                       [("worst slice gap", RED, [((s.get("worst_slices") or [{}])[0] or {}).get("gap")
                                                  for s in summaries])], reference=0.0)
    evidence = line_chart("Detectors' evidence per run, as a share of the way to their thresholds (1: alert)",
                          [("harm, strongest slice", RED, [_progress(s.get("harm")) for s in summaries]),
                           ("drift, strongest feature", BLUE, [_progress(s.get("drift")) for s in summaries])],
                          reference=1.0)
    return {"severity": _safe(severity_chart([s.get("severity", "none") for s in summaries])),
            "performance": _safe(performance), "shift": _safe(shift), "worst": _safe(worst),
            "evidence": _safe(evidence)}


def _progress(checks: list[dict] | None) -> float | None:
    """``log R / log threshold`` of the strongest detector (0 at no evidence, 1 at its threshold);
    None when the run stored no e-detector checks (label-free estimates have no evidence)."""
    values = [math.log(max(c["evidence"], 1.0)) / math.log(c["threshold"]) for c in checks or []
              if c.get("evidence") is not None and c.get("threshold")]
    return round(max(values), 3) if values else None


def _standing(tested: list[Any]) -> list[dict[str, Any]]:
    """Standing limitations of the latest tested run: shown, never alerted."""
    if not tested:
        return []
    return [lim for lim in (tested[-1].summary or {}).get("limitations", []) if lim.get("standing")]


def render_monitor_html(monitor: Any, runs: list[Any], alerts: list[Any], budget: dict[str, Any],
                        deliveries: Sequence[Any] = ()) -> str:
    """The trend page of ``monitor`` over ``runs`` (oldest first) with its alert history."""
    tested = [r for r in runs if r.status == "succeeded" and r.summary]
    # one numbering for charts and table: a run's number among the tested runs (no-data and failed runs
    # have none), so "run 3" in a chart is the row numbered 3
    number = {id(r): k for k, r in enumerate(tested, start=1)}
    rows = [{"n": number.get(id(r), ""), "id": r.id, "status": r.status, "started": _when(r.started_at or r.created_at),
             "n_rows": r.n_rows, "audit_id": r.audit_id, "alpha": r.alpha,
             "notes": list((r.summary or {}).get("notes") or []),
             "severity": (r.verdict or {}).get("severity", ""), "summary": (r.verdict or {}).get("summary", "")
             or (r.error or {}).get("message", ""),
             # only slices worse than overall, in words: a signed gap listed slices better than overall as "worst"
             "worst": ", ".join(f"{w.get('name')} ({w.get('gap'):.3f} below overall)" for w in (r.summary or {}).get(
                 "worst_slices", []) if w.get("gap") is not None and w["gap"] > 0)
             or ("none below overall" if (r.summary or {}).get("worst_slices") else "")}
            for r in runs][-RUN_CAP:]
    history = [{"id": a.id, "key": a.key, "kind": a.kind, "severity": a.severity, "statement": a.statement,
                "state": a.state, "opened": _when(a.created_at), "last_seen": _when(a.last_seen),
                "resolved": _when(a.resolved_at)} for a in alerts][-ALERT_CAP:]
    return _environment().get_template("monitor.html.j2").render(
        monitor={"id": monitor.id, "name": monitor.name, "benchmark": monitor.benchmark_id, "domain": monitor.domain,
                 "source": monitor.source.get("type"), "schedule": monitor.schedule,
                 "warnings": list(monitor.source.get("warnings") or [])},
        runs=rows, n_runs=len(runs), alerts=history, budget=budget, charts=_charts(tested),
        standing=_standing(tested), generated=_when(datetime.now(timezone.utc)),
        deliveries=[{"run_id": d.run_id, "event": d.event, "attempt": d.attempt, "ok": d.ok,
                     "status": d.status_code, "at": _when(d.at),
                     # one text for every failure: what failed (refused, timed out, a status code)
                     # would tell open ports from closed ones on hosts the service can reach
                     "error": f"delivery failed (attempt {d.attempt}); see the server log"}
                    for d in list(deliveries)[-ALERT_CAP:]])
