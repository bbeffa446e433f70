"""The HTML audit report: one self-contained, offline file.

* Rendered from the AuditResult JSON alone (what ``GET /v1/audits/{id}`` returns, field names in
  ``reports/SCHEMA.md``): the limitations, verdict and next-round plan are read from it unless the
  caller passes freshly computed ones. Newer fields (limitation ``key``/``definition``,
  ``covariate.distributions``, ``label.observed_prior``) are used when present, skipped when not.
* It leads with the most severe harm: the verdict, then the top limitation stated once (with
  its numbers and the rows it concerns), then the other limitations ranked.
* No JavaScript, no external style, font or image: inline CSS and inline SVG charts only (and,
  when the caller passes them, small JPEG thumbnails as data URIs: :mod:`reports.thumbnails`).
* Jinja2 with autoescape ON: every user string (column, value, slice and domain names) is
  escaped by the template; only chart SVG (text XML-escaped where it is built, then checked) is
  marked safe.
* Bounded size whatever the data: every table is capped (with an "N more" note), every user
  string shortened, and only aggregates are shown.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from reports import html_sections as sections
from reports.formatting import (
    as_list, capitalise, fmt_decision, fmt_metric, fmt_n, fmt_seconds, fmt_value, get, metric_label, num, shorten,
)
from reports.html_sections import ROW_CAP, TABLE_CAP
from reports.html_sections import generated_text as _generated
from reports.limitations import verdict as compute_verdict
from reports.reading import as_dict, is_local, legacy, pack_title
from reports.records import CORRECTION_LABELS, HIGH_SCORE, KIND_LABELS, MEDIUM_SCORE, SeverityPriors, claim_of

__all__ = ["render_html", "TABLE_CAP", "ROW_CAP"]

LIMITATION_CAP = 30
NAME_LIMIT, TEXT_LIMIT = 80, 2_000  # statements are generated: shown whole, bounded only against runaway names
STATUS_BADGES = {"inconclusive": "Inconclusive", "no_shift": "No change detected"}


@lru_cache(maxsize=1)
def _environment():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined
    env = Environment(loader=FileSystemLoader(str(Path(__file__).with_name("templates"))),
                      autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["short"] = lambda text, limit=NAME_LIMIT: shorten(text, limit)
    return env


def _limitations(audit: Mapping, limitations) -> list[dict]:
    items = as_list(audit.get("limitations")) if limitations is None else [as_dict(lim) for lim in limitations]
    items = [lim for lim in items if isinstance(lim, Mapping)]
    return sorted(items, key=lambda lim: num(lim.get("rank")) or 0)


def _verdict(audit: Mapping, limitations, items: list[dict]) -> dict:
    if limitations is None and isinstance(audit.get("verdict"), Mapping):
        return dict(audit["verdict"])
    records = [SimpleNamespace(kind=str(d.get("kind") or ""), severity=str(d.get("severity") or "low"),
                               rank=d.get("rank") or 0, title=str(d.get("title") or ""), key=d.get("key"),
                               claim=claim_of(d)) for d in items]
    return compute_verdict(audit, records)


def _limitation_row(lim: Mapping) -> dict:
    title = str(lim.get("title") or lim.get("statement") or "")
    evidence = lim.get("evidence") if isinstance(lim.get("evidence"), Mapping) else {}
    definition = lim.get("definition") or evidence.get("definition") or ""
    return {"rank": lim.get("rank"), "kind": KIND_LABELS.get(lim.get("kind"), str(lim.get("kind") or "")),
            "severity": str(lim.get("severity") or "low"), "title": _generated(capitalise(title), 240),
            "statement": _generated(lim.get("statement"), TEXT_LIMIT), "score": fmt_value(num(lim.get("score"))),
            "basis": _generated(evidence.get("severity_basis"), 160),
            "definition": shorten(definition, 200), "key": shorten(lim.get("key") or "", 80),
            "claim": claim_of(lim), "decision": _generated(fmt_decision(lim.get("decision")), 600)}


def _outranking_standing(v: Mapping, standing: Sequence[Mapping]) -> Mapping | None:
    """The worst standing limitation when it is more severe than every change (named in the banner:
    an assumed change must not hide a measured weakness the benchmark shows as well)."""
    order = {"none": 0, "low": 1, "medium": 2, "high": 3}
    worst = max(standing, key=lambda r: order.get(r["severity"], 0), default=None)
    if worst is None or order.get(worst["severity"], 0) <= order.get(str(v.get("severity") or "none"), 0):
        return None
    return worst


def _verdict_view(v: Mapping) -> dict:
    """What the banner shows: a lead clause when changes were claimed (the top one is stated below it),
    else the whole summary; an inconclusive audit is never shown in the all-clear colour."""
    severity = str(v.get("severity") or "none")
    status = str(v.get("status") or ("shift" if v.get("shift_detected") else "no_shift"))
    summary = str(v.get("summary") or "")
    lead = summary.split(":")[0] if status == "shift" and v.get("changes") and ":" in summary else None
    tone = "inconclusive" if status == "inconclusive" else severity
    badge = STATUS_BADGES.get(status) if status == "inconclusive" or severity == "none" else None
    return {"severity": severity, "status": status, "lead": lead, "summary": summary, "tone": tone, "badge": badge}


def _headline(audit: Mapping, items: Sequence[Mapping]) -> dict:
    metric_name = get(audit, "overall", "metric") or get(audit, "parameters", "primary_metric")
    production = fmt_metric(get(audit, "overall", "production_value"), get(audit, "overall", "production_ci"),
                            missing="")
    production_note = "observed with production labels"
    if not production:
        estimates = sections.label(audit)["estimates"]
        if estimates and estimates[0]["value"] != sections.MISSING:
            production, production_note = "≈ " + estimates[0]["value"], f"label-free estimate ({estimates[0]['method']})"
        else:
            production, production_note = "not measured", "no production labels and no label-free estimate"
    counts = {s: sum(1 for lim in items if lim.get("severity") == s) for s in ("high", "medium", "low")}
    n_overall = get(audit, "overall", "n") or get(audit, "benchmark", "n_rows")
    return {
        "metric": metric_label(metric_name), "production": production, "production_note": production_note,
        "benchmark": fmt_metric(get(audit, "overall", "benchmark_value"), get(audit, "overall", "benchmark_ci"),
                                missing="not measured"),
        "benchmark_n": fmt_n(n_overall) + ", " if num(n_overall) is not None else "",
        "n_benchmark": fmt_n(get(audit, "benchmark", "n_rows"))[2:],
        "n_production": fmt_n(get(audit, "production", "n_rows"))[2:],
        "counts": counts, "shifts": [(name, _section_shift(audit, key)) for name, key in
                                     (("Covariate", "covariate"), ("Label", "label"), ("Context", "semantic"))],
    }


def _section_shift(audit: Mapping, key: str):
    """A section's ``is_shift``, but ``None`` ("not tested") when none of its tests ran: "no shift" is a
    finding only when something was tested."""
    flag = get(audit, key, "is_shift")
    if flag is True:
        return True
    section = get(audit, key, default={})
    if not isinstance(section, Mapping):
        return None
    if key == "covariate":
        tests = as_list(section.get("features")) + as_list(get(section, "outputs", "tests"))
        tests += [section["multivariate"]] if isinstance(section.get("multivariate"), Mapping) else []
    elif key == "semantic":
        tests = as_list(section.get("contexts"))
    else:
        tests = [section] + ([section["observed_test"]] if isinstance(section.get("observed_test"), Mapping) else [])
    ran = any(str(t.get("status", "ok")) == "ok" and num(t.get("p_value")) is not None for t in tests)
    return flag if ran else None


def _flatten(value, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(value, Mapping):
        return [item for k, v in value.items() for item in _flatten(v, f"{prefix}{k}." if prefix or k else "")]
    key = prefix.rstrip(".")
    if isinstance(value, (list, tuple)):
        return [(key, shorten(fmt_value(list(value[:20])), 160))]
    return [(key, shorten(fmt_value(value), 160))]


def _engine_note(engine) -> str | None:
    """One sentence on how a Dask-engine audit computed its numbers (the pandas engine needs none)."""
    if not isinstance(engine, Mapping) or engine.get("name") != "dask":
        return None
    sample = engine.get("sample") or {}
    sketch = engine.get("sketch") or {}
    parts = engine.get("n_partitions") or {}
    return (f"Computed on the Dask engine from {fmt_value(parts.get('benchmark'))} benchmark and "
            f"{fmt_value(parts.get('production'))} production Parquet partitions. Exact, from counts of every row: "
            f"{'; '.join(map(str, engine.get('exact') or []))}. From {sketch.get('type', 'quantile')} sketches "
            f"(k = {fmt_value(sketch.get('k'))}, CDF error ≤ {fmt_value(sketch.get('rank_error'))} per sketch): "
            f"{'; '.join(map(str, engine.get('sketched') or []))}. On a uniform sample of "
            f"{fmt_value(sample.get('benchmark_rows'))} benchmark and {fmt_value(sample.get('production_rows'))} "
            f"production rows: {'; '.join(map(str, engine.get('sampled') or []))}.")


def _priors(params: Mapping) -> dict:
    """The gaps this audit assumed where none could be measured: as recorded, else the defaults."""
    recorded = get(params, "severity_priors")
    defaults = SeverityPriors()
    source = recorded if isinstance(recorded, Mapping) else {}
    values = {name: fmt_value(num(source.get(name)) if num(source.get(name)) is not None else getattr(defaults, name))
              for name in ("untested_gap", "shift_gap", "label_shift_gap")}
    return {**values, "recorded": bool(source)}


def _timings(audit: Mapping) -> list[tuple[str, str]]:
    timings = get(audit, "timings", default={})
    if not isinstance(timings, Mapping):
        return []
    rows = [(str(k)[:-2] if str(k).endswith("_s") else str(k), fmt_seconds(v)) for k, v in timings.items()]
    return [(shorten(k.replace("_", " "), 60), v) for k, v in rows][:20]


def _created(value) -> str:
    """``2026-11-30T23:48:30.487161+00:00`` → ``2026-11-30 23:48 UTC`` (as given when unparsable)."""
    from datetime import datetime, timezone
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return shorten(value, 40)
    if when.tzinfo is None:
        return when.strftime("%Y-%m-%d %H:%M")
    return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _title(audit: Mapping, pack_title: str) -> dict:
    bench = get(audit, "benchmark", "name") or get(audit, "benchmark", "id") or "benchmark"
    prod = get(audit, "production", "name") or get(audit, "production", "id") or "production"
    given = get(audit, "title")  # the audit's own title (the caller's, else "<pack title>: <files>")
    title = given if isinstance(given, str) and given.strip() else f"{pack_title}: {shorten(bench, 60)} → {shorten(prod, 60)}"
    return {"title": shorten(title, 200), "pack_title": pack_title,
            "audit_id": "" if is_local(audit) else shorten(get(audit, "id"), NAME_LIMIT)}


def render_html(audit: Mapping, limitations: Sequence | None = None, plan: Any = None,
                thumbnails: Mapping[str, Sequence[str]] | None = None, thumbnail_note: str | None = None) -> str:
    """Render the whole report as one self-contained HTML string (well under 1 MB).

    Parameters
    ----------
    audit : mapping or pydantic model
        The AuditResult (``GET /v1/audits/{id}``).
    limitations : sequence of Limitation or of dicts, optional
        Default: the AuditResult's own ``limitations`` (and then its ``verdict``).
    plan : NextRoundPlan or dict, optional
        Default: the AuditResult's own ``next_round``.
    thumbnails, thumbnail_note : optional
        :func:`reports.thumbnails.thumbnail_strips`: data URIs by limitation key, shown in each
        limitation, and why some are missing (listed with the notes).
    """
    audit = legacy(audit)
    items = _limitations(audit, limitations)
    rows = [{**_limitation_row(lim), "thumbnails": list((thumbnails or {}).get(str(lim.get("key") or lim.get("rank")), ()))}
            for lim in items]
    changes = [r for r in rows if r["claim"] == "change"]
    standing = [r for r in rows if r["claim"] == "standing"]
    top, rest = (changes[0], changes[1:]) if changes else (None, [])
    shown, more = sections.capped(rest, LIMITATION_CAP)
    standing_shown, standing_more = sections.capped(standing, LIMITATION_CAP)
    params = get(audit, "parameters", default={})
    params = params if isinstance(params, Mapping) else {}
    v = _verdict(audit, limitations, items)
    context = {
        **_title(audit, pack_title(audit)), "status": str(get(audit, "status") or ""),
        "created": _created(get(audit, "created_at")) if get(audit, "created_at") else "", "synthetic": get(audit, "synthetic") is True,
        "verdict": _verdict_view(v),
        "top": top, "headline": _headline(audit, items), "limitations": shown, "limitations_more": more,
        "standing": standing_shown, "standing_more": standing_more, "n_changes": len(changes),
        "standing_worst": _outranking_standing(v, standing),
        "n_limitations": len(rows),
        "covariate": sections.covariate(audit), "label": sections.label(audit), "context": sections.context(audit),
        "slices": sections.slices(audit, [str(lim.get("slice")) for lim in items
                                          if lim.get("kind") == "underperforming_slice" and lim.get("slice")]),
        "plan": sections.plan(as_dict(plan) if plan is not None else get(audit, "next_round")),
        "parameters": _flatten({k: v for k, v in params.items() if k != "engine"})[:60], "timings": _timings(audit),
        "engine": _engine_note(get(params, "engine")),
        "companion": get(params, "evidently_companion") is True,
        "notes": [{"part": shorten(n.get("part"), 80), "reason": shorten(n.get("reason"), 300)}
                  for n in as_list(get(audit, "notes"))][:TABLE_CAP]
                 + ([{"part": "thumbnails", "reason": thumbnail_note}] if thumbnail_note else []),
        "priors": _priors(params), "high_score": HIGH_SCORE, "medium_score": MEDIUM_SCORE,
        "alpha": fmt_value(num(get(params, "alpha")) or 0.05),
        "correction": CORRECTION_LABELS.get(str(get(params, "correction") or "bh"), shorten(get(params, "correction"), 40)),
    }
    return _environment().get_template("report.html.j2").render(**context)
