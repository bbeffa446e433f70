"""The HTML audit report: one self-contained, offline file.

* Rendered once, from the AuditResult alone (what ``GET /v1/audits/{id}`` returns, field names in
  ``reports/SCHEMA.md``): its limitations, verdict and next-round plan, and what the images add
  (:class:`reports.report_images.ReportImages`), decided before. Newer fields (limitation ``key``/``definition``,
  ``covariate.distributions``, ``label.observed_prior``) are used when present, skipped when not.
* It leads with the most severe harm: the verdict, then the top limitation stated once (with
  its numbers and the rows it concerns), then the other limitations ranked.
* No JavaScript, no external style, font or image: inline CSS and inline SVG charts only (and,
  when the audit asked for them, small JPEG thumbnails as data URIs: :mod:`reports.thumbnails`).
* Jinja2 with autoescape ON: every user string (column, value, slice and domain names) is
  escaped by the template; only chart SVG (text XML-escaped where it is built, then checked) is
  marked safe.
* Bounded size whatever the data: every table is capped (with an "N more" note), every user
  string shortened, and only aggregates are shown.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from reports import html_sections as sections
from reports.formatting import (
    capitalise,
    fmt_decision,
    fmt_metric,
    fmt_n,
    fmt_seconds,
    fmt_value,
    metric_label,
    shorten,
)
from reports.html_scenarios import scenario_view
from reports.html_sections import ROW_CAP, TABLE_CAP, generated_text as _generated
from reports.limitations import verdict as compute_verdict
from reports.reading import is_local, pack_title, recorded
from reports.records import CORRECTION_LABELS, HIGH_SCORE, KIND_LABELS, MEDIUM_SCORE, SeverityPriors
from reports.report_images import ReportImages
from reports.result import AuditEvidence, LimitationRecord, Parameters, Verdict, as_evidence

__all__ = ["render_html", "TABLE_CAP", "ROW_CAP"]

LIMITATION_CAP = 30
NAME_LIMIT, TEXT_LIMIT = 80, 2_000  # statements are generated: shown whole, bounded only against runaway names
STATUS_BADGES = {"inconclusive": "Inconclusive", "no_shift": "No change detected"}
SEVERITY_ORDER = {"none": 0, "low": 1, "medium": 2, "high": 3}


@lru_cache(maxsize=1)
def _environment():
    env = Environment(loader=FileSystemLoader(str(Path(__file__).with_name("templates"))),
                      autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["short"] = lambda text, limit=NAME_LIMIT: shorten(text, limit)
    return env


def _limitation_row(lim: LimitationRecord) -> dict:
    definition = lim.definition or lim.evidence.get("definition") or ""
    return {"rank": lim.rank, "kind": KIND_LABELS.get(lim.kind, lim.kind), "severity": lim.severity,
            "title": _generated(capitalise(lim.title or lim.statement), 240),
            "statement": _generated(lim.statement, TEXT_LIMIT), "score": fmt_value(lim.score),
            "basis": _generated(lim.evidence.get("severity_basis"), 160),
            "definition": shorten(definition, 200), "key": shorten(lim.key, 80),
            "claim": lim.claim, "decision": _generated(fmt_decision(lim.decision), 600)}


def _outranking_standing(v: Verdict, standing: Sequence[Mapping]) -> Mapping | None:
    """The worst standing limitation when it is more severe than every change (named in the banner:
    an assumed change must not hide a measured weakness the benchmark shows as well)."""
    worst = max(standing, key=lambda r: SEVERITY_ORDER.get(r["severity"], 0), default=None)
    if worst is None or SEVERITY_ORDER.get(worst["severity"], 0) <= SEVERITY_ORDER.get(v.severity, 0):
        return None
    return worst


def _verdict_view(v: Verdict) -> dict:
    """What the banner shows: a lead clause when changes were claimed (the top one is stated below it),
    else the whole summary; an inconclusive audit is never shown in the all-clear colour."""
    # results stored before ``status`` existed: the shift flag tells
    status = recorded(v, "status") or ("shift" if v.shift_detected else "no_shift")
    lead = v.summary.split(":")[0] if status == "shift" and v.changes and ":" in v.summary else None
    tone = "inconclusive" if status == "inconclusive" else v.severity
    badge = STATUS_BADGES.get(status) if status == "inconclusive" or v.severity == "none" else None
    return {"severity": v.severity, "status": status, "lead": lead, "summary": v.summary, "tone": tone,
            "badge": badge}


def _headline(audit: AuditEvidence, items: Sequence[LimitationRecord]) -> dict:
    overall = audit.overall
    production = fmt_metric(overall.production_value, overall.production_ci, missing="") if overall else ""
    production_note = "observed with production labels"
    n_labelled, n_rows = audit.production.n_labelled, audit.production.n_rows
    if n_labelled is not None and n_rows is not None and 0 < n_labelled < n_rows:
        production_note = f"observed on the {n_labelled:,} of {n_rows:,} production rows that carry a label"
    if not production:
        estimates = sections.label(audit)["estimates"]
        if estimates and estimates[0]["value"] != sections.MISSING:
            production = "≈ " + estimates[0]["value"]
            production_note = f"label-free estimate ({estimates[0]['method']})"
        else:
            production, production_note = "not measured", "no production labels and no label-free estimate"
    counts = {s: sum(1 for lim in items if lim.severity == s) for s in ("high", "medium", "low")}
    n_overall = (overall.n if overall else None) or audit.benchmark.n_rows
    return {
        "metric": metric_label(audit.metric), "production": production, "production_note": production_note,
        "benchmark": fmt_metric(overall.benchmark_value, overall.benchmark_ci, missing="not measured")
        if overall else "not measured",
        "benchmark_n": fmt_n(n_overall) + ", " if n_overall is not None else "",
        "n_benchmark": fmt_n(audit.benchmark.n_rows)[2:],
        "n_production": fmt_n(audit.production.n_rows)[2:],
        "counts": counts, "shifts": [("Covariate", _covariate_shift(audit)), ("Label", _label_shift(audit)),
                                     ("Context", _context_shift(audit))],
    }


# A section's ``is_shift``, but ``None`` ("not tested") when none of its tests ran: "no shift" is a
# finding only when something was tested.
def _shift_if_tested(flag, ran: bool):
    return True if flag is True else (flag if ran else None)


def _covariate_shift(audit: AuditEvidence):
    cov = audit.covariate
    tests = [*cov.features, *(cov.outputs.tests if cov.outputs else []),
             *([cov.multivariate] if cov.multivariate else [])]
    return _shift_if_tested(recorded(cov, "is_shift"), any(t.ran for t in tests))


def _label_shift(audit: AuditEvidence):
    lab = audit.label
    ran = (lab.status == "ok" and lab.p_value is not None) or (lab.observed_test is not None and lab.observed_test.ran)
    return _shift_if_tested(recorded(lab, "is_shift"), ran)


def _context_shift(audit: AuditEvidence):
    return _shift_if_tested(recorded(audit.semantic, "is_shift"), any(t.ran for t in audit.semantic.contexts))


def _flatten(value, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(value, Mapping):
        return [item for k, v in value.items() for item in _flatten(v, f"{prefix}{k}." if prefix or k else "")]
    key = prefix.rstrip(".")
    if isinstance(value, (list, tuple)):
        return [(key, shorten(fmt_value(list(value[:20])), 160))]
    return [(key, shorten(fmt_value(value), 160))]


def _parameter_rows(params: Parameters) -> list[tuple[str, str]]:
    """The options as the audit recorded them (defaults it did not record are not claimed), engine apart."""
    given = params.model_dump(mode="json", exclude_unset=True)
    return _flatten({k: v for k, v in given.items() if k != "engine"})[:60]


def _engine_note(engine: Mapping[str, Any]) -> str | None:
    """One sentence on how a Dask-engine audit computed its numbers (the pandas engine needs none)."""
    if engine.get("name") != "dask":
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


def _priors(params: Parameters) -> dict:
    """The gaps this audit assumed where none could be measured: as recorded, else the defaults."""
    recorded_priors, defaults = params.severity_priors, SeverityPriors()
    values = {name: fmt_value(recorded_priors[name] if recorded_priors.get(name) is not None
                              else getattr(defaults, name))
              for name in ("untested_gap", "shift_gap", "label_shift_gap")}
    return {**values, "recorded": bool(recorded_priors)}


def _timings(audit: AuditEvidence) -> list[tuple[str, str]]:
    rows = [(k[:-2] if k.endswith("_s") else k, fmt_seconds(v)) for k, v in audit.timings.items()]
    return [(shorten(k.replace("_", " "), 60), v) for k, v in rows][:20]


def _created(value: str) -> str:
    """``2026-11-30T23:48:30.487161+00:00`` → ``2026-11-30 23:48 UTC`` (as given when unparsable)."""
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return shorten(value, 40)
    if when.tzinfo is None:
        return when.strftime("%Y-%m-%d %H:%M")
    return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _title(audit: AuditEvidence, pack_title: str) -> dict:
    bench = audit.benchmark.name or audit.benchmark.id or "benchmark"
    prod = audit.production.name or audit.production.id or "production"
    # the audit's own title (the caller's, else "<pack title>: <files>")
    title = audit.title if audit.title.strip() else f"{pack_title}: {shorten(bench, 60)} → {shorten(prod, 60)}"
    return {"title": shorten(title, 200), "pack_title": pack_title,
            "audit_id": "" if is_local(audit) else shorten(audit.id, NAME_LIMIT)}


def render_html(audit: AuditEvidence | Mapping, *, images: ReportImages | None = None) -> str:
    """Render the whole report as one self-contained HTML string (well under 1 MB).

    Parameters
    ----------
    audit : AuditResult, or its JSON
        The AuditResult (``GET /v1/audits/{id}``), rendered with its own limitations, verdict and
        next round; evidence concluded by :func:`reports.conclude` renders the same way.
    images : ReportImages, optional
        :func:`reports.report_images.report_images`: thumbnails by limitation key shown in each
        limitation, why some are missing (listed with the notes), a sentence by limitation key
        shown beside it (a skin-tone finding's brightness and cast), and 1:1 native crops beside a
        finding about compression, noise or sharpness.
    """
    audit = as_evidence(audit)
    images = images or ReportImages()
    items = sorted(audit.limitations, key=lambda lim: lim.rank)
    rows = [{**_limitation_row(lim), "thumbnails": list(images.thumbnails.get(str(lim.key or lim.rank), ())),
             "image_note": images.notes.get(str(lim.key or lim.rank)),
             "crops": list(images.crops.get(str(lim.key or lim.rank), ()))}
            for lim in items]
    changes = [r for r in rows if r["claim"] == "change"]
    standing = [r for r in rows if r["claim"] == "standing"]
    top, rest = (changes[0], changes[1:]) if changes else (None, [])
    shown, more = sections.capped(rest, LIMITATION_CAP)
    standing_shown, standing_more = sections.capped(standing, LIMITATION_CAP)
    params = audit.parameters
    v = audit.verdict or compute_verdict(audit, items)
    context = {
        **_title(audit, pack_title(audit)), "status": recorded(audit, "status") or "",
        "created": _created(audit.created_at) if audit.created_at else "", "synthetic": audit.synthetic,
        "verdict": _verdict_view(v),
        "top": top, "headline": _headline(audit, items), "limitations": shown, "limitations_more": more,
        "standing": standing_shown, "standing_more": standing_more, "n_changes": len(changes),
        "standing_worst": _outranking_standing(v, standing),
        "n_limitations": len(rows),
        "covariate": sections.covariate(audit), "label": sections.label(audit), "context": sections.context(audit),
        "slices": sections.slices(audit, [lim.slice for lim in items
                                          if lim.kind == "underperforming_slice" and lim.slice]),
        "plan": sections.plan(audit.next_round), "scenarios": scenario_view(audit),
        "parameters": _parameter_rows(params), "timings": _timings(audit),
        "engine": _engine_note(params.engine),
        "companion": params.evidently_companion,
        "notes": [{"part": shorten(n.part, 80), "reason": shorten(n.reason, 300)} for n in audit.notes][:TABLE_CAP]
                 + ([{"part": "thumbnails", "reason": images.thumbnail_note}] if images.thumbnail_note else []),
        "priors": _priors(params), "high_score": HIGH_SCORE, "medium_score": MEDIUM_SCORE,
        "alpha": fmt_value(params.alpha or 0.05),
        "correction": CORRECTION_LABELS.get(params.correction or "bh", shorten(params.correction, 40)),
    }
    return _environment().get_template("report.html.j2").render(**context)
