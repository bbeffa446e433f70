"""A plain HTML index of datasets and audits, with links to the reports."""
from __future__ import annotations

from html import escape
from urllib.parse import quote

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from reports.result import DatasetRef
from service.audits.stored import shown_sections
from service.deps import RuntimeDep
from service.monitors.store import MonitorStore

router = APIRouter(tags=["index"])

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>contextshift</title>
<style>body{{font:15px/1.5 system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#1f2933}}
table{{border-collapse:collapse;width:100%;margin-bottom:2rem}}td,th{{border-bottom:1px solid #e4e7eb;
padding:.4rem .6rem;text-align:left}}th{{background:#f5f7fa}}.high{{color:#b42318}}.medium{{color:#b54708}}
.low{{color:#1d4ed8}}.none{{color:#027a48}}code{{font-size:13px}}</style></head><body>
<h1>contextshift</h1><p>Context-shift audits of production ML models. API docs: <a href="/docs">/docs</a>.</p>
<h2>Audits</h2><table><tr><th>audit</th><th>benchmark → production</th><th>domain</th><th>created</th><th>status</th>
<th>verdict</th><th>report</th></tr>
{audits}</table><h2>Benchmark series</h2><table><tr><th>series</th><th>domain</th><th>rounds</th>
<th>report</th></tr>{benchmarks}</table><h2>Monitors</h2><table><tr><th>monitor</th><th>name</th>
<th>domain</th><th>trends</th></tr>{monitors}</table><h2>Datasets</h2><table><tr><th>id</th><th>name</th><th>role</th><th>rows</th>
<th>columns</th><th>created</th></tr>{datasets}</table></body></html>"""


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def index(runtime: RuntimeDep) -> HTMLResponse:
    listed = runtime.datasets.list(limit=200)
    names = {d.id: d.name for d in listed}
    audits = "".join(_audit_row(a, names) for a in runtime.audits.list(limit=200)) or \
        "<tr><td colspan=7>No audits yet: POST /v1/audits.</td></tr>"
    datasets = "".join(
        f"<tr><td><code>{escape(d.id)}</code></td><td>{escape(d.name)}</td><td>{escape(d.role)}</td>"
        f"<td>{d.n_rows:,}</td><td>{d.n_columns}</td><td>{d.created_at:%Y-%m-%d %H:%M}</td></tr>"
        for d in listed) or "<tr><td colspan=6>No datasets yet.</td></tr>"
    return HTMLResponse(PAGE.format(audits=audits, datasets=datasets, benchmarks=_benchmark_rows(runtime),
                                    monitors=_monitor_rows(runtime)))


def _monitor_rows(runtime) -> str:
    return "".join(
        f"<tr><td><code>{escape(m.id)}</code></td><td>{escape(m.name)}</td><td>{escape(m.domain)}</td>"
        f'<td><a href="/v1/monitors/{quote(m.id, safe="")}/report">trends</a></td></tr>'
        for m in MonitorStore(runtime.sessions).list()) \
        or "<tr><td colspan=4>No monitors yet: POST /v1/monitors.</td></tr>"


def _benchmark_rows(runtime) -> str:
    series = runtime.rounds.list_series()
    return "".join(
        f"<tr><td>{escape(s.name)}</td><td>{escape(s.domain)}</td><td>{s.n_rounds}</td>"
        f'<td><a href="/v1/benchmarks/{quote(s.name, safe="")}/report">progress</a></td></tr>'
        for s in series) or "<tr><td colspan=4>No benchmark series yet: POST /v1/benchmarks/{name}/rounds.</td></tr>"


def _dataset_name(ref: DatasetRef, ident: str, names: dict[str, str]) -> str:
    """The dataset's name: from the audit's result, else from the datasets listed, else its id."""
    return str(ref.name or names.get(ident) or ident)


def _audit_row(audit, names: dict[str, str]) -> str:
    shown, problem = shown_sections(audit.result, "verdict", "domain", "benchmark", "production")
    verdict = shown.verdict
    # "none" is no word for a reader: the summary's own first words say "No change..." or "Inconclusive"
    severity = verdict.severity if verdict and verdict.severity != "none" else ""
    tone = severity or (verdict.status if verdict else "")
    summary = escape(verdict.summary if verdict else problem or str((audit.error or {}).get("message", "")))
    link = (f'<a href="/v1/audits/{escape(audit.id)}/report">HTML</a> · '
            f'<a href="/v1/audits/{escape(audit.id)}/report.md">Markdown</a>'
            if audit.status == "succeeded" else f"{audit.progress:.0%} {escape(audit.stage or '')}")
    bench = _dataset_name(shown.benchmark, audit.benchmark_id, names)
    prod = _dataset_name(shown.production, audit.production_id, names)
    pair = f"{escape(bench[:80])} → {escape(prod[:80])}"
    created = f"{audit.created_at:%Y-%m-%d %H:%M}" if audit.created_at else ""
    # the pack the audit ran under (a former name such as "medical" shows as the pack it names)
    domain = str(shown.domain or audit.domain)
    return (f"<tr><td><code>{escape(audit.id)}</code></td><td>{pair}</td><td>{escape(domain)}</td>"
            f"<td>{created}</td><td>{escape(audit.status)}</td><td class=\"{escape(tone)}\">"
            + (f"<span>{escape(severity)}</span> " if severity else "") + f"{summary}</td><td>{link}</td></tr>")
