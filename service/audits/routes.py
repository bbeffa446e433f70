"""Audits: submit (runs in the background), follow, read the result, the reports and the plan."""
from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from fastapi import APIRouter, Query, Response, status
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse

from reports.result import AuditResult, as_result
from service.audits.models import AuditRow
from service.audits.schemas import AuditCreate, AuditList, AuditRequest, AuditState, AuditStatus
from service.audits.stored import shown_sections, stored_sections
from service.deps import RuntimeDep
from service.errors import Conflict, InvalidRequest, NotFound, QueueFull, StoredResultInvalid
from service.schemas import ERROR_RESPONSES, ErrorResponse

router = APIRouter(prefix="/v1/audits", tags=["audits"], responses=ERROR_RESPONSES)
# a guess the client can act on: one audit of a typical table takes tens of seconds
RETRY_AFTER_S = 30


def status_of(row: AuditRow) -> AuditStatus:
    shown, problem = shown_sections(row.result, "verdict")
    verdict = shown.verdict
    error = row.error if problem is None else {"code": StoredResultInvalid.code, "message": problem}
    # the column is a plain string; the store writes only these states, and pydantic checks it again
    return AuditStatus(id=row.id, status=cast(AuditState, row.status), progress=row.progress, stage=row.stage,
                       domain=row.domain, benchmark=row.benchmark_id, production=row.production_id,
                       created_at=row.created_at, finished_at=row.finished_at,
                       verdict=verdict.model_dump(mode="json") if verdict else None,
                       error=error)


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=AuditStatus,
             responses={429: {"model": ErrorResponse, "description": "Too many audits queued; see Retry-After"}})
def create_audit(body: AuditCreate, runtime: RuntimeDep) -> AuditStatus | JSONResponse:
    """Queue an audit of ``production`` against ``benchmark`` (or the union of a ``benchmark_series``'
    rounds, materialised as a stored benchmark dataset) under a domain pack. 429 with ``Retry-After``
    while ``CONTEXTSHIFT_MAX_QUEUED_AUDITS`` audits wait to run."""
    try:
        _check_queue(runtime)
    except QueueFull as exc:  # the generic error handler sets no headers; Retry-After is the point here
        return JSONResponse(status_code=exc.status_code, content=exc.to_body(),
                            headers={"Retry-After": str(exc.retry_after_s)})
    series = _series_benchmark(runtime, body) if body.benchmark_series else None
    bench = series[0] if series else runtime.datasets.get(body.benchmark)
    prod = runtime.datasets.get(body.production)
    if bench.role != "benchmark" or prod.role != "production":
        raise InvalidRequest(
            f"'benchmark' must name a benchmark dataset and 'production' a production dataset "
            f"(got roles {bench.role!r} and {prod.role!r}).", code="invalid_dataset_role",
            details={"benchmark": bench.role, "production": prod.role})
    runtime.packs.get(body.domain)
    if body.annotations is not None:
        notes = runtime.datasets.get(body.annotations)
        if notes.role != "annotations":
            raise InvalidRequest(f"'annotations' must name a dataset of role 'annotations' (got {notes.role!r}).",
                                 code="invalid_dataset_role", details={"annotations": notes.role})
    request = AuditRequest(options=body.options, annotations=body.annotations,
                           benchmark_series=series[1] if series else None)
    row = runtime.audits.create(benchmark_id=bench.id, production_id=prod.id, domain=body.domain,
                                options=request.stored())
    runtime.worker.submit(row.id)
    return status_of(row)


def _check_queue(runtime: Any) -> None:
    """Refuse new work past the cap, before anything (a series' union) is materialised. Parallel
    submissions may overshoot the cap by their number: it bounds the backlog, not exactly."""
    cap = runtime.settings.max_queued_audits
    queued = runtime.audits.count_queued()
    if queued >= cap:
        raise QueueFull(f"{queued} audits are already waiting to run (limit {cap}, "
                        f"CONTEXTSHIFT_MAX_QUEUED_AUDITS); retry in {RETRY_AFTER_S} s.",
                        retry_after_s=RETRY_AFTER_S,
                        details={"queued": queued, "max_queued_audits": cap,
                                 "limit": "CONTEXTSHIFT_MAX_QUEUED_AUDITS", "retry_after_s": RETRY_AFTER_S})


def _series_benchmark(runtime: Any, body: AuditCreate) -> tuple[Any, dict[str, Any]]:
    """The union of the series' rounds as a benchmark dataset, and what the result records of it;
    the audit's domain defaults to the series'."""
    rounds = runtime.rounds
    domain = rounds.series(body.benchmark_series).domain
    if "domain" not in body.model_fields_set:
        body.domain = domain
    row, numbers = rounds.materialise_union(body.benchmark_series)
    return row, {"name": body.benchmark_series, "rounds": numbers, "dataset": row.id}


@router.get("", response_model=AuditList)
def list_audits(runtime: RuntimeDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0) -> AuditList:
    rows = runtime.audits.list(limit=limit, offset=offset)
    return AuditList(items=[status_of(r) for r in rows])


@router.get("/{audit_id}", response_model=AuditResult | AuditStatus,
            description="The AuditResult once succeeded; otherwise its status and progress.")
def get_audit(audit_id: str, runtime: RuntimeDep) -> JSONResponse:
    row = runtime.audits.get(audit_id)
    if row.status == "succeeded" and row.result is not None:
        request = AuditRequest.from_stored(audit_id, row.options)
        series = {"benchmark_series": request.benchmark_series} if request.benchmark_series else {}
        body = {**row.result, **series, "id": row.id, "status": row.status}
        try:
            body = as_result(body).model_dump(mode="json")
        except ValueError as exc:  # never served unchecked: the user is told what is wrong and what to do
            raise StoredResultInvalid(
                f"The stored result of audit {audit_id!r} does not fit the AuditResult contract, so it is not "
                "served; run the audit again (POST /v1/audits with the same datasets) to get a result that does.",
                details={"audit_id": audit_id, "problem": str(exc)[:2000]}) from None
        return JSONResponse(body)
    return JSONResponse(status_of(row).model_dump(mode="json"))


@router.delete("/{audit_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_audit(audit_id: str, runtime: RuntimeDep) -> Response:
    row = runtime.audits.get(audit_id)
    if row.status in ("queued", "running"):
        raise Conflict(f"Audit {audit_id!r} is {row.status}; wait until it has finished.")
    runtime.audits.delete(audit_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


def _finished(runtime: Any, audit_id: str) -> AuditRow:
    row = runtime.audits.get(audit_id)
    if row.status != "succeeded":
        raise Conflict(f"Audit {audit_id!r} is {row.status}; its report exists once it has succeeded.",
                       code="audit_not_ready", details={"status": row.status, "progress": row.progress})
    return row


def _report_file(runtime: Any, audit_id: str, suffix: str) -> str:
    path = runtime.audits.reports_dir / f"{audit_id}{suffix}"
    if not path.exists():
        raise NotFound(f"Audit {audit_id!r} has no {suffix} report.")
    return path.read_text(encoding="utf-8")


@router.get("/{audit_id}/report", response_class=HTMLResponse)
def get_report(audit_id: str, runtime: RuntimeDep) -> HTMLResponse:
    _finished(runtime, audit_id)
    return HTMLResponse(_report_file(runtime, audit_id, ".html"))


@router.get("/{audit_id}/report.md", response_class=PlainTextResponse)
def get_report_markdown(audit_id: str, runtime: RuntimeDep) -> PlainTextResponse:
    _finished(runtime, audit_id)
    return PlainTextResponse(_report_file(runtime, audit_id, ".md"), media_type="text/markdown")


@router.get("/{audit_id}/report.evidently", response_class=HTMLResponse)
def get_evidently_report(audit_id: str, runtime: RuntimeDep) -> HTMLResponse:
    _finished(runtime, audit_id)
    return HTMLResponse(_report_file(runtime, audit_id, ".evidently.html"))


@router.get("/{audit_id}/next-round")
def get_next_round(audit_id: str, runtime: RuntimeDep,
                   format: Literal["json", "csv", "jsonl"] = "json") -> Response:
    row = _finished(runtime, audit_id)
    if format == "json":
        try:
            plan = stored_sections(row.result, "next_round").next_round
        except ValueError as exc:
            raise StoredResultInvalid(
                f"The stored next-round plan of audit {audit_id!r} does not fit the AuditResult contract; run the "
                "audit again to get one that does.", details={"audit_id": audit_id, "problem": str(exc)[:2000]}
            ) from None
        return JSONResponse(plan.model_dump(mode="json") if plan else {})
    text = _report_file(runtime, audit_id, f".next-round.{format}")
    media = "text/csv" if format == "csv" else "application/x-ndjson"
    return Response(text, media_type=media,
                    headers={"Content-Disposition": f'attachment; filename="{audit_id}-next-round.{format}"'})
