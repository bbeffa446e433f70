"""Benchmarks: named series of labelled rounds, their statistics, report and exports."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Response, status
from fastapi.responses import HTMLResponse, JSONResponse

from reports.rounds_html import render_rounds_html
from service.deps import RuntimeDep
from service.rounds import exports
from service.rounds.coverage import plan_allocations
from service.rounds.schemas import DEFAULT_MIN_GAIN, SERIES_NAME, RoundCreate, RoundOut, SeriesItem, SeriesList
from service.rounds.store import RoundStore
from service.schemas import ERROR_RESPONSES

router = APIRouter(prefix="/v1/benchmarks", tags=["benchmarks"], responses=ERROR_RESPONSES)


def get_rounds(runtime: RuntimeDep) -> RoundStore:
    return runtime.rounds


RoundsDep = Annotated[RoundStore, Depends(get_rounds)]
MinGain = Annotated[float | None, Query(gt=0, lt=1, description="Smallest gain that matters: a stall starts only "
                                                               "on rounds whose interval rules out a gain this large "
                                                               "(default 0.05).")]
SeriesName = Annotated[str, Path(pattern=SERIES_NAME, description="Name of the benchmark series.")]
Threshold = Annotated[float, Query(gt=0, le=1, description="Saturation threshold of the primary metric.")]
Alpha = Annotated[float, Query(gt=0, lt=0.5, description="Target false discovery rate of the rounds' improvement "
                                                        "tests (LORD++: each round's level is fixed from the earlier "
                                                        "rounds' decisions, so a published decision never changes).")]


@router.post("/{name}/rounds", status_code=status.HTTP_201_CREATED, response_model=RoundOut)
def register_round(name: SeriesName, body: RoundCreate, rounds: RoundsDep) -> RoundOut:
    """Register a labelled dataset as the next round of ``name`` (created by its first round)."""
    row = rounds.register(name, dataset_id=body.dataset, plan=body.plan, model=body.model)
    return RoundOut(benchmark=name, number=row.number, dataset=row.dataset_id, plan=row.plan_audit_id,
                    model=row.model, domain=rounds.series(name).domain, created_at=row.created_at)


@router.get("", response_model=SeriesList)
def list_benchmarks(rounds: RoundsDep) -> SeriesList:
    return SeriesList(items=[SeriesItem(name=s.name, domain=s.domain, n_rounds=s.n_rounds, created_at=s.created_at)
                             for s in rounds.list_series()])


def series_summary(rounds: RoundStore, name: str, *, saturation_threshold: float, alpha: float,
                   min_gain: float | None = None) -> Any:
    # lazy: the series statistics load SciPy (~1.5 s), at the first request, not at API start-up
    from service.rounds.series import RoundInput, summarise_series

    series = rounds.series(name)
    inputs = [RoundInput(r.number, r.dataset_id, r.model, r.plan_audit_id, rounds.table(r), rounds.plan_result(r))
              for r in rounds.rounds(name)]
    return summarise_series(name, series.domain, rounds.packs.get(series.domain), inputs,
                            saturation_threshold=saturation_threshold, alpha=alpha, min_gain=min_gain)


@router.get("/{name}", response_model=dict[str, Any],
            description="Per-round metric, cumulative metric, MER/vMER, improvement with its test level and "
                        "decision (fixed when the round arrived), annotators, plan coverage; stall (with its history) "
                        "and saturation flags, label noise, and a one-sentence summary.")
def get_benchmark(name: SeriesName, rounds: RoundsDep, saturation_threshold: Threshold = 0.8,
                  alpha: Alpha = 0.05, min_gain: MinGain = DEFAULT_MIN_GAIN) -> JSONResponse:
    summary = series_summary(rounds, name, saturation_threshold=saturation_threshold, alpha=alpha,
                             min_gain=min_gain)
    return JSONResponse(summary.to_dict())


@router.get("/{name}/report", response_class=HTMLResponse)
def get_benchmark_report(name: SeriesName, rounds: RoundsDep, saturation_threshold: Threshold = 0.8,
                         alpha: Alpha = 0.05, min_gain: MinGain = DEFAULT_MIN_GAIN) -> HTMLResponse:
    """Offline HTML: progress curve, plan coverage heat map, annotator shares, stall and saturation."""
    summary = series_summary(rounds, name, saturation_threshold=saturation_threshold, alpha=alpha,
                             min_gain=min_gain)
    return HTMLResponse(render_rounds_html(summary.to_dict()))


@router.get("/{name}/rounds/{number}/export")
def export_round(name: SeriesName, number: int, rounds: RoundsDep,
                 format: Literal["jsonl", "csv"] = "jsonl") -> Response:
    """The round's rows as Dynabench-style JSON Lines (context, label, tags, metadata) or CSV."""
    row = rounds.round(name, number)
    ds = rounds.datasets.get(row.dataset_id)
    render = exports.to_jsonl if format == "jsonl" else exports.to_csv
    text = render(rounds.datasets.load_frame(ds.id), ds.columns, series=name, number=number, model=row.model,
                  allocations=plan_allocations(rounds.plan_result(row)))
    media = "application/x-ndjson" if format == "jsonl" else "text/csv"
    return Response(text, media_type=media,
                    headers={"Content-Disposition": f'attachment; filename="{name}-round-{number}.{format}"'})
