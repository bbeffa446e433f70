"""The audit pipeline: the caller validated the data; here the detectors run, the whole audit
is corrected as one family of tests, and ``reports`` ranks, plans and renders. The public entry is
:func:`audit.run_audit`; :func:`run` takes the whole :class:`AuditInput`.

The stages write into one typed :class:`AuditState`, in the order of :data:`STAGES`; every
detector result in it exposes its tests (``.tests`` / ``.with_tests``) for the audit-wide
correction; :mod:`audit.pipeline.sections` builds each section of the typed
:class:`reports.result.AuditEvidence` from the corrected results, and the ranking, the verdict and
the plan complete it into the :class:`reports.result.AuditResult`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np
import pandas as pd

from audit.claims.scenarios import match_scenarios
from audit.data_quality import data_quality_notes
from audit.engine import EngineSummaries
from audit.errors import AuditInputError
from audit.options import AuditOptions
from audit.pipeline import mix, overall, reference, slicing, stages
from audit.pipeline.columns import AuditColumns, align_named_roles, resolve_columns
from audit.pipeline.facts import one_limitation_per_fact
from audit.pipeline.family import correct_together
from audit.pipeline.input_notes import derived_columns, identical_copy_notes, production_only_context_notes
from audit.pipeline.labelled_rows import labelled_context, set_aside_one_sided
from audit.pipeline.sections import audit_evidence
from audit.pipeline.state import AuditState
from audit.pipeline.targets import candidates_frame, target_masks, untested_definition
from audit.role_hints import missing_role_notes, role_disagreements
from domains import evaluate
from reports import plan_next_round, render_html, render_markdown, to_csv, to_jsonl, verdict
from reports.evidently_page import evidently_page_html
from reports.findings_labels import saturation_note
from reports.limitations import undecided_notes
from reports.records import RankingContext
from reports.result import AuditEvidence, AuditResult, Note

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
    pack: Any  # a domains.DomainPack
    options: AuditOptions
    annotations: tuple[pd.DataFrame, dict[str, str]] | None = None  # (table, column roles)
    title: str | None = None  # shown in the report; default: "<pack title>: <benchmark> vs <production>"
    summaries: EngineSummaries | None = None  # an engine's counts and sketches of every row, when it scanned them
    # benchmark-side fits kept across audits (audit.pipeline.reference_cache.ReferenceCache); the
    # result is the same with or without it, only faster when the benchmark was seen before
    reference_cache: Any = None
    benchmark_digest: str | None = None  # the stored benchmark's sha256; None: the cache hashes the frame
    data_quality: dict[str, list] | None = None  # warnings on every row (Dask engine); None: the frames are checked
    # recorded in the result's parameters beside the options (the benchmark series a benchmark was built from)
    extra_parameters: dict[str, Any] = field(default_factory=dict)
    # (AuditResult, production rows) -> what the images add to the report (the service's thumbnails)
    report_images: Callable[[AuditResult, pd.DataFrame], Any] | None = None
    # False: the result only; the HTML and Markdown come after it is final and stay empty
    render: bool = True


@dataclass(frozen=True)
class AuditOutcome:
    """The typed result of one audit and its renderings (all from the result alone, but the
    Evidently companion page, which reads the rows)."""

    result: AuditResult
    html: str
    markdown: str
    companion_html: str | None = None
    exports: dict[str, str] | None = None  # next-round plan as "csv" and "jsonl" text

    @property
    def result_json(self) -> dict[str, Any]:
        """The result as the JSON the API serves and the stores keep."""
        return self.result.model_dump(mode="json")


def _covariate(s: AuditState, inp: AuditInput) -> None:
    ctx = s.ctx
    s.covariate, s.multivariate = ctx.guard("covariate shift", (None, None), stages.covariate, ctx)
    s.outputs = ctx.guard("model-output shift (BBSD)", None, stages.model_outputs, ctx)
    if s.labelled_ctx is not None:
        s.labelled_ctx.covariate_result = ctx.covariate_result


def _label(s: AuditState, inp: AuditInput) -> None:
    ctx = s.ctx
    s.bench_out = ctx.outputs(ctx.benchmark, labelled=True)
    s.prod_out = ctx.outputs(ctx.production, labelled=ctx.columns.production_label is not None
                             and s.labelled is None)
    if s.labelled_ctx is not None:
        s.labelled_out = s.labelled_ctx.outputs(s.labelled_ctx.production, labelled=True)
    lctx, prod = s.label_view()
    parts = stages.label(lctx, s.bench_out, prod)
    s.prior, s.concept, s.estimates = parts.get("prior"), parts.get("concept"), parts.get("estimates") or []


def _discovery(s: AuditState, inp: AuditInput) -> None:
    ctx = s.ctx
    s.slices, s.definitions = slicing.expert_masks(ctx)
    s.sources = {name: "expert" for name in s.slices}
    lctx, prod = s.label_view()
    s.discovered, errors = ctx.guard("weak-slice discovery", (None, None), slicing.discovery, lctx, s.bench_out,
                                     prod)
    for found in slicing.novel_discoveries(lctx, s.discovered, s.on_labelled(s.slices), errors,
                                           prod.y_true is not None):
        name = found.definition  # the conditions themselves are the most telling name
        s.slices[name] = (found.mask(ctx.benchmark), found.mask(ctx.production))
        s.definitions[name], s.sources[name] = found.definition, "discovered"


def _context(s: AuditState, inp: AuditInput) -> None:
    ctx = s.ctx
    found = ctx.guard("context shift", None, stages.context, ctx, s.slices, s.definitions)
    s.context = slicing.merge_untested(ctx, found, s.slices)
    _untested_as_slices(s)


def _untested_as_slices(s: AuditState) -> None:
    """Untested contexts are measured like slices (source "untested"), so that with labelled
    production rows the audit states their production metric instead of "unknown"."""
    if s.context is None:
        return
    for u in s.context.untested_contexts:
        definition = untested_definition(u, s.definitions)
        if u.name in s.slices or definition is None:
            continue
        try:
            masks = (evaluate(definition, s.ctx.benchmark).to_numpy(),
                     evaluate(definition, s.ctx.production).to_numpy())
        except (ValueError, KeyError):  # a definition the data cannot evaluate: reported, not measured
            continue
        twin = next((name for name, (b, p) in s.slices.items()
                     if np.array_equal(b, masks[0]) and np.array_equal(p, masks[1])), None)
        if twin is not None:  # an expert slice selects the same rows: its metric is this context's
            s.measured_by[u.name] = twin
            continue
        s.slices[u.name], s.definitions[u.name], s.sources[u.name] = masks, definition, "untested"


def _slice_metrics(s: AuditState, inp: AuditInput) -> None:
    ctx = s.ctx
    mix = slicing.mix_shifted(ctx, s.context, s.slices)
    lctx, prod = s.label_view()
    if mix is not None and s.labelled is not None:
        mix = (mix[0], mix[1][s.labelled.mask], mix[2])
    s.evaluation, s.overall_eval = ctx.guard("slice metrics", (None, None), slicing.slice_metrics, lctx,
                                             s.on_labelled(s.slices), s.definitions, s.sources, s.bench_out, prod, mix)
    s.overall_change = ctx.guard("overall metric change", None, overall.overall_change, lctx, s.overall_eval,
                                 s.bench_out, prod)


def _attribution(s: AuditState, inp: AuditInput) -> None:
    ctx = s.ctx
    lctx, prod = s.label_view()  # the cells are over the rows attributed: the labelled ones when partly labelled
    s.attribution, s.cells = ctx.guard("performance attribution", (None, None), mix.attribution, lctx, s.context,
                                       s.bench_out, prod)
    s.conditional = ctx.guard("context-conditional test", None, mix.conditional, lctx, s.covariate, s.cells)


def _embedding(s: AuditState, inp: AuditInput) -> None:
    ctx = s.ctx
    s.embedding = ctx.guard("embedding shift", None, stages.embedding, ctx)
    s.label_quality = ctx.guard("label quality", None, stages.label_quality, ctx, inp.annotations, s.slices)


# (timing name, progress label shown while it runs, stage)
STAGES: tuple[tuple[str, str, Callable[[AuditState, AuditInput], None]], ...] = (
    ("covariate", "covariate shift", _covariate),
    ("label", "label shift", _label),
    ("discovery", "slice discovery", _discovery),
    ("context", "context shift", _context),
    ("slices", "slice metrics", _slice_metrics),
    ("attribution", "attribution", _attribution),
    ("embedding", "embeddings", _embedding),
)


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

    def totals(self) -> dict[str, float]:
        return {**self.timings, "total_s": round(time.perf_counter() - self.started, 3)}


def check_auditable(columns: AuditColumns) -> None:
    """Refuse an audit with nothing to compare: no shared input or context column and no model output."""
    comparable = columns.features or columns.contexts or columns.embeddings
    if comparable or columns.prediction or columns.scores:
        return
    raise AuditInputError(
        "Nothing to audit: the benchmark and production share no feature, context or embedding column and carry no "
        "model output (prediction, score or proba_<class>). Check that both files describe the same model's inputs; "
        f"benchmark-only columns: {list(columns.only_in_benchmark)[:10]}, production-only columns: "
        f"{list(columns.only_in_production)[:10]}.", code="cannot_audit",
        details={"only_in_benchmark": list(columns.only_in_benchmark)[:50],
                 "only_in_production": list(columns.only_in_production)[:50]})


def run(inp: AuditInput, progress: Progress) -> AuditOutcome:
    """Run every stage on ``inp``, correct the audit's tests as one family, rank, plan and render."""
    production_roles, production, mapped = align_named_roles(inp.benchmark_roles, inp.production_roles,
                                                             inp.production)
    if mapped:
        inp = replace(inp, production=production, production_roles=production_roles)
    columns = resolve_columns(inp.benchmark_roles, inp.production_roles)
    check_auditable(columns)

    notes: list[dict[str, str]] = [*mapped, *role_disagreements(inp.benchmark_roles, inp.production_roles)]
    notes += missing_role_notes(inp.benchmark, inp.production, inp.benchmark_roles, inp.production_roles)
    notes += identical_copy_notes(inp.benchmark, inp.production, inp.benchmark_ref, inp.production_ref)
    notes += data_quality_notes(inp)  # values outside the pack's declared ranges, by row
    benchmark, columns = stages.complete_labels(inp.benchmark, inp.production, columns, notes,
                                                partial=inp.summaries is None)
    derived = derived_columns(inp.benchmark, inp.production, inp.benchmark_ref, inp.production_ref)
    columns = set_aside_one_sided(benchmark, inp.production, columns, notes, {"columns": derived})
    notes += production_only_context_notes(columns.contexts_only_in_production, derived)
    ctx = stages.StageContext(benchmark, inp.production, columns, inp.pack, inp.options, notes=notes,
                              summaries=inp.summaries, parameters=dict(inp.extra_parameters))
    ctx.classes = stages.resolve_classes(ctx)
    ctx.reference = reference.for_audit(inp.reference_cache, inp.benchmark, inp.benchmark_digest, columns, ctx.classes,
                                        inp.pack, {**ctx.options.model_dump(), **ctx.parameters},
                                        ctx.min_slice_size, ctx.alpha)
    state = AuditState(ctx=ctx)
    partly = labelled_context(ctx, inp.production)  # production labelled on some rows: those rows' context
    if partly is not None:
        state.labelled, state.labelled_ctx = partly
    clock = _Clock(progress, n_stages=len(STAGES) + 2)
    progress(0.01, STAGES[0][1])
    for i, (name, _, run) in enumerate(STAGES):
        run(state, inp)
        clock.stage(name, STAGES[i + 1][1] if i + 1 < len(STAGES) else "correcting and ranking")
    corrected, state.n_tests = correct_together(state.tested(), alpha=ctx.alpha, method=ctx.correction)
    state.set_tested(corrected)
    return _report(inp, state, clock)


def _report(inp: AuditInput, state: AuditState, clock: _Clock) -> AuditOutcome:
    ctx = state.ctx
    evidence = overall.with_overall_change(audit_evidence(inp, state), state.overall_change)
    evidence = overall.with_estimate_checks(evidence, ctx.alpha)
    limitations, _causes = one_limitation_per_fact(evidence, state, inp.production)
    notes = [*evidence.notes, *(Note.model_validate(n) for n in _ranking_notes(evidence, ctx))]
    scenarios = match_scenarios(getattr(inp.pack, "scenarios", ()), evidence, limitations)
    evidence = evidence.model_copy(update={"notes": notes, "scenarios": scenarios})
    production = state.production_outputs()
    candidates = candidates_frame(inp.production, ctx.columns.id, production.uncertainty(), production.y_pred,
                                  target_masks(limitations, state))
    if state.labelled is not None:  # rows that already carry a label are not asked for again
        candidates = candidates[~state.labelled.mask[candidates.index.to_numpy()]]
    plan = plan_next_round(evidence, limitations, budget=ctx.options.budget,
                           min_slice_size=ctx.min_slice_size, candidates=candidates)
    conclusions = {"limitations": [lim.to_dict() for lim in limitations], "verdict": verdict(evidence, limitations),
                   "next_round": plan.to_dict()}
    clock.stage("ranking", "rendering the report")
    companion = _companion(inp, ctx) if ctx.options.evidently_companion else None
    # timings are measured before rendering, so that the report and the JSON agree
    result = AuditResult.model_validate({**dict(evidence), **conclusions, "timings": clock.totals()})
    # rendered from the AuditResult alone: its stored limitations, verdict and plan, computed once above
    html = markdown = ""
    if inp.render:
        images = inp.report_images(result, inp.production) if inp.report_images else None
        html = render_html(result, images=images)
        markdown = render_markdown(result, images=images)  # the skin-tone notes beside their findings too
    clock.stage("report", "done")
    return AuditOutcome(result=result, html=html, markdown=markdown,
                        companion_html=companion, exports={"csv": to_csv(plan), "jsonl": to_jsonl(plan)})


def _ranking_notes(evidence: AuditEvidence, ctx: stages.StageContext) -> list[dict[str, str]]:
    """Rules of the ranking that were deliberately not applied, so the user is not left guessing."""
    threshold = ctx.options.saturation_threshold
    rank_ctx = RankingContext.from_audit(evidence, saturation_threshold=threshold, alpha=ctx.alpha, priors=None)
    note = saturation_note(evidence, rank_ctx)
    undecided = undecided_notes(evidence, saturation_threshold=threshold, alpha=ctx.alpha)
    return ([] if note is None else [note]) + undecided


def _companion(inp: AuditInput, ctx: stages.StageContext) -> str:
    cols = ctx.columns
    # everything the audit compares: inputs, contexts, the model's outputs and, when both sides
    # are labelled, the labels (a label only the benchmark has cannot be compared)
    wanted = [*cols.features, *cols.contexts, cols.prediction, *cols.scores, cols.production_label]
    compared = list(dict.fromkeys(c for c in wanted if c is not None and c in inp.benchmark.columns
                                  and c in inp.production.columns))

    def numeric(column: str) -> bool:
        return all(pd.api.types.is_numeric_dtype(frame[column]) and not pd.api.types.is_bool_dtype(frame[column])
                   for frame in (inp.benchmark, inp.production))

    numerical = [c for c in compared if numeric(c) and c not in (cols.prediction, cols.production_label)]
    categorical = [c for c in compared if c not in numerical]
    return evidently_page_html(inp.benchmark[compared], inp.production[compared], numerical_columns=numerical,
                               categorical_columns=categorical, random_state=ctx.seed)
