"""The audit pipeline: validation is done at upload; here the detectors run, the whole audit
is corrected as one family of tests, and ``reports`` ranks, plans and renders (SPEC §4–§8)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

import pandas as pd

from detectors.base import to_jsonable
from service.pipeline import assemble, slicing, stages
from service.pipeline.columns import resolve_columns
from service.pipeline.family import correct_together

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class AuditInput:
    audit_id: str
    benchmark: pd.DataFrame
    production: pd.DataFrame
    benchmark_roles: dict[str, str]
    production_roles: dict[str, str]
    benchmark_ref: dict[str, Any]
    production_ref: dict[str, Any]
    pack: Any
    options: dict[str, Any]
    annotations: tuple[pd.DataFrame, dict[str, str]] | None = None  # (table, column roles)


@dataclass(frozen=True)
class AuditOutcome:
    result: dict[str, Any]
    html: str
    markdown: str
    companion_html: str | None = None
    exports: dict[str, str] | None = None  # next-round plan as "csv" and "jsonl" text


class _Clock:
    """Stage timings plus progress reports."""

    def __init__(self, progress: Progress, n_stages: int) -> None:
        self.progress, self.n_stages, self.done = progress, n_stages, 0
        self.timings: dict[str, float] = {}
        self.started = self.last = time.perf_counter()

    def stage(self, name: str, next_label: str) -> None:
        now = time.perf_counter()
        self.timings[f"{name}_s"] = round(now - self.last, 3)
        self.last = now
        self.done += 1
        self.progress(min(self.done / self.n_stages, 0.99), next_label)


def run_audit(inp: AuditInput, progress: Progress) -> AuditOutcome:
    columns = resolve_columns(inp.benchmark_roles, inp.production_roles)
    notes: list[dict[str, str]] = []
    benchmark, columns = stages.complete_labels(inp.benchmark, inp.production, columns, notes)
    for column in columns.contexts_only_in_production:
        notes.append({"part": f"context {column}", "reason": f"'{column}' is recorded in production but not in the "
                      "benchmark, so none of its contexts can be evaluated: record it in the next round."})
    ctx = stages.StageContext(benchmark, inp.production, columns, inp.pack, dict(inp.options), notes=notes)
    ctx.classes = stages.resolve_classes(ctx)
    clock = _Clock(progress, n_stages=8)
    progress(0.01, "covariate shift")
    cov, multivariate = ctx.guard("covariate shift", (None, None), stages.covariate, ctx)
    outputs = ctx.guard("model-output shift (BBSD)", None, stages.model_outputs, ctx)
    clock.stage("covariate", "label shift")
    bench_out = ctx.outputs(benchmark, labelled=True)
    prod_out = ctx.outputs(inp.production, labelled=columns.production_label is not None)
    label_parts = stages.label(ctx, bench_out, prod_out)
    clock.stage("label", "slice discovery")
    slices, definitions = slicing.expert_masks(ctx)
    sources = {name: "expert" for name in slices}
    discovered, errors = ctx.guard("weak-slice discovery", (None, None), slicing.discovery, ctx, bench_out, prod_out)
    for found in slicing.novel_discoveries(ctx, discovered, slices, errors, prod_out.y_true is not None):
        name = found.definition  # the conditions themselves are the most telling name
        slices[name] = (found.mask(benchmark), found.mask(inp.production))
        definitions[name], sources[name] = found.definition, "discovered"
    clock.stage("discovery", "context shift")
    context = slicing.merge_untested(ctx, ctx.guard("context shift", None, stages.context, ctx, slices), slices)
    clock.stage("context", "slice metrics")
    mix = slicing.mix_shifted(ctx, context, slices)
    evaluation, overall_eval = ctx.guard("slice metrics", (None, None), slicing.slice_metrics, ctx, slices,
                                         definitions, sources, bench_out, prod_out, mix)
    clock.stage("slices", "attribution")
    attribution, cells = ctx.guard("performance attribution", (None, None), stages.attribution, ctx, context,
                                   bench_out, prod_out)
    conditional = ctx.guard("context-conditional test", None, stages.conditional, ctx, cov, cells)
    clock.stage("attribution", "embeddings")
    embedding = ctx.guard("embedding shift", None, stages.embedding, ctx)
    label_quality = ctx.guard("label quality", None, stages.label_quality, ctx, inp.annotations, slices)
    clock.stage("embedding", "correcting and ranking")

    family = [cov, multivariate, outputs, label_parts.get("prior"), label_parts.get("concept"), context,
              evaluation, overall_eval, conditional, embedding]
    corrected, n_tests = correct_together(family, alpha=ctx.alpha, method=ctx.correction)
    (cov, multivariate, outputs, prior, concept, context, evaluation, overall_eval, conditional,
     embedding) = corrected
    evaluation = evaluation.with_tests(evaluation.tests) if evaluation is not None else None
    overall_eval = overall_eval.with_tests(overall_eval.tests) if overall_eval is not None else None
    label_parts.update(prior=prior, concept=concept)

    overall = assemble.overall_block(overall_eval)
    result = {
        "id": inp.audit_id, "status": "succeeded", "created_at": datetime.now(timezone.utc).isoformat(),
        "domain": inp.pack.name,
        "synthetic": bool(inp.benchmark.attrs.get("synthetic") or inp.production.attrs.get("synthetic")),
        "benchmark": {**inp.benchmark_ref, "n_rows": len(benchmark)},
        "production": {**inp.production_ref, "n_rows": len(inp.production),
                       "labelled": columns.production_label is not None},
        "overall": overall,
        "covariate": assemble.covariate_block(cov, multivariate, outputs),
        "label": assemble.label_block(label_parts, overall),
        "semantic": assemble.semantic_block(context, embedding, attribution, conditional,
                                            columns.contexts_only_in_production),
        "slices": assemble.slices_block(evaluation, {s.name: s.title for s in inp.pack.slices if s.title}),
        "label_quality": None if label_quality is None else label_quality.to_dict(),
        "discovery": None if discovered is None else {k: v for k, v in discovered.to_dict().items() if k != "slices"},
        "columns": columns.to_dict(),
        "parameters": {**ctx.options, "domain_pack": inp.pack.name, "primary_metric": inp.pack.primary_metric,
                       "min_slice_size": ctx.min_slice_size, "n_tests_corrected": n_tests,
                       "classes": ctx.classes},
        "notes": ctx.notes,
    }
    return _report(inp, ctx, result, slices, prod_out, clock)


def _report(inp: AuditInput, ctx: stages.StageContext, result: dict[str, Any], slices: dict,
            prod_out: stages.Outputs, clock: _Clock) -> AuditOutcome:
    from reports import plan_next_round, rank_limitations, render_html, render_markdown, to_csv, to_jsonl, verdict

    limitations = rank_limitations(result, saturation_threshold=ctx.options.get("saturation_threshold"),
                                   alpha=ctx.alpha)
    prod_masks = {name: masks[1] for name, masks in slices.items()}
    masks = {**prod_masks, **assemble.untested_masks(inp.production, result["semantic"]["untested_contexts"],
                                                     prod_masks)}
    candidates = assemble.candidates_frame(inp.production, ctx.columns.id, prod_out.uncertainty(),
                                           prod_out.y_pred, masks)
    plan = plan_next_round(result, limitations, budget=int(ctx.options["budget"]),
                           min_slice_size=ctx.min_slice_size, candidates=candidates)
    result["limitations"] = [lim.to_dict() for lim in limitations]
    result["verdict"] = verdict(result, limitations)
    result["next_round"] = plan.to_dict()
    clock.stage("ranking", "rendering the report")
    result["timings"] = {**clock.timings, "total_s": round(time.perf_counter() - clock.started, 3)}
    html = render_html(result, limitations, plan)
    markdown = render_markdown(result, limitations)
    companion = _companion(inp, ctx) if ctx.options.get("evidently_companion") else None
    clock.stage("report", "done")
    result["timings"] = {**clock.timings, "total_s": round(time.perf_counter() - clock.started, 3)}  # with rendering
    result = to_jsonable(result)  # plain JSON: no NaN (PostgreSQL's JSON and strict encoders refuse it)
    return AuditOutcome(result=result, html=html, markdown=markdown, companion_html=companion,
                        exports={"csv": to_csv(plan), "jsonl": to_jsonl(plan)})


def _companion(inp: AuditInput, ctx: stages.StageContext) -> str:
    from reports.evidently_page import evidently_page_html

    features = list(ctx.columns.features)
    numeric = [c for c in features if pd.api.types.is_numeric_dtype(inp.benchmark[c])]
    categorical = [c for c in features if c not in numeric]
    return evidently_page_html(inp.benchmark[features], inp.production[features], numerical_columns=numeric,
                               categorical_columns=categorical, random_state=ctx.seed)
