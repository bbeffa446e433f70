"""Each section of the AuditResult from its corrected detector results, typed as it is built.

A detector result knows its own record (``to_dict()``); a section model takes it as it is, or, where the
detector nests its test (the classifier test, the embedding test, label quality), through the model's
``from_detector``. The section's ``is_shift`` is decided here, from the detectors' own decisions.
"""
from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

import numpy as np

from audit.engine.exact import describe, outcomes_exact
from audit.pipeline.bbse_trust import trusted_prior
from audit.pipeline.distributions import feature_distributions
from audit.pipeline.targets import untested_definition
from detectors import metric_registry
from detectors.base import to_jsonable
from reports.records import SeverityPriors
from reports.result import (
    AuditEvidence,
    CovariateSection,
    EmbeddingTest,
    LabelQuality,
    LabelSection,
    MultivariateTest,
    Overall,
    SemanticSection,
    SliceRecord,
)

__all__ = ["audit_evidence", "overall_section", "covariate_section", "label_section", "semantic_section",
           "slice_records"]


def _d(obj: Any) -> Any:
    return None if obj is None else obj.to_dict()


def overall_section(metric_eval: Any) -> Overall | None:
    """The primary metric on all rows and its within-context change test (``overall_eval``)."""
    if metric_eval is None:
        return None
    b, p = metric_eval.overall_benchmark, metric_eval.overall_production
    change = metric_eval.slices[0]
    change_test = next((t for t in metric_eval.tests if t.kind == "slice_performance"), None)
    # validated from a mapping: the fields left out take the defaults the model declares
    return Overall.model_validate(dict(
        metric=metric_eval.metric, benchmark_value=b.value, benchmark_ci=[b.ci_low, b.ci_high], n=b.n,
        production_value=p.value if p else None, production_ci=[p.ci_low, p.ci_high] if p else None,
        n_production=p.n if p else None, change_p_value=change.p_value,
        change_p_value_adjusted=change.p_value_adjusted, changed=change.changed,
        change_excluded_contexts=change_test.details.get("excluded_contexts", []) if change_test is not None else []))


def covariate_section(cov: Any, multivariate: Any, outputs: Any, distributions: dict[str, dict]) -> CovariateSection:
    record = cov.to_dict() if cov is not None else {}
    # The model's outputs are inputs to its decisions: for image domains without tabular features
    # they are the main covariate signal (BBSD), so a flagged output test is a covariate shift.
    is_shift = bool(record.get("is_shift")) or any(r is not None and r.is_shift for r in (multivariate, outputs))
    return CovariateSection.model_validate({
        **record, "is_shift": is_shift, "distributions": distributions, "outputs": _d(outputs),
        "multivariate": None if multivariate is None else MultivariateTest.from_detector(multivariate.to_dict())})


def label_section(prior: Any, concept: Any, estimates: list, overall: Overall | None) -> LabelSection:
    """The class mix (decided by the observed labels when production has them, else BBSE), the label-free
    estimates of the primary metric and, with production labels, the measured one."""
    record: dict[str, Any] = prior.to_dict() if prior is not None else {
        "status": "not_run", "reason": "needs benchmark labels and predictions in both datasets"}
    if prior is not None:
        record["p_value_adjusted"] = prior.test.p_value_adjusted
    metric = overall.metric if overall else None
    record["estimated_performance"] = {"metric": metric,
                                       "benchmark_value": overall.benchmark_value if overall else None,
                                       "methods": _method_estimates(estimates, metric)}
    record["concept"] = _d(concept)
    record["observed_prior"] = dict(concept.production_prior) if concept is not None else None
    observed_test = getattr(concept, "label_test", None)
    record["observed_test"] = _d(observed_test)
    if overall is not None and overall.production_value is not None:
        record["observed_performance"] = {
            "metric": overall.metric, "benchmark_value": overall.benchmark_value, "benchmark_ci": overall.benchmark_ci,
            "production_value": overall.production_value, "production_ci": overall.production_ci,
            "n_benchmark": overall.n, "n_production": overall.n_production,
            "p_value_adjusted": overall.change_p_value_adjusted, "is_shift": bool(overall.changed),
            "excluded_contexts": overall.change_excluded_contexts}
    # The label section answers "did the class mix change?": with production labels the observed
    # label test decides; without them, BBSE's. A change of P(y|x) is concept shift, reported apart.
    if observed_test is not None and observed_test.status == "ok":
        record["is_shift"], record["decided_by"] = bool(observed_test.drifted), "observed_labels"
    else:
        # an estimate whose premise the audit contradicts claims nothing (the reason is kept beside it)
        record["is_shift"] = bool(record.get("is_shift")) and record.get("reliable") is not False
        record["decided_by"] = "bbse" if prior is not None else None
    return LabelSection.model_validate(to_jsonable(record))


def _method_estimates(estimates: list, metric: str | None) -> dict[str, dict]:
    """Each estimator's record, with its figure for the primary metric (or accuracy) as ``{estimate, ci}``."""
    methods = {}
    for e in estimates:
        record = e.to_dict()
        keys = [m.key for m in e.metrics]
        key = metric if metric in keys else ("accuracy" if "accuracy" in keys else None)
        if key is not None:
            m = e.get(key)
            record.update(metric=key, estimate=m.value, ci_low=m.ci_low, ci_high=m.ci_high)
        methods[e.method] = record
    return to_jsonable(methods)


def semantic_section(state: Any, contexts_only_in_production: tuple[str, ...]) -> SemanticSection:
    """Context shift. A discovered slice's share test stays in the family and in the evidence, but alone it
    does not make the section's ``is_shift``: the slice's boundaries were chosen on these rows, and null
    audits on real tables read "a shift was detected" with nothing to claim."""
    context, embedding, conditional = state.context, state.embedding, state.conditional
    discovered = {n for n, source in state.sources.items() if source == "discovered"}
    record = context.to_dict() if context is not None else {}
    shares = record.pop("slice_shares", [])
    # slice-share tests join the context tests (kind "slice_share"), with both shares in their details
    record["contexts"] = [*record.get("contexts", []), *(_share_test(s) for s in shares)]
    untested = context.untested_contexts if context is not None else ()
    record["untested_contexts"] = [{**u.to_dict(), "definition": untested_definition(u, state.definitions),
                                    "measured_by": state.measured_by.get(u.name, u.name)} for u in untested]
    # candidates that are not claimed (too few rows, within chance, too small a share): kept, with the reason
    record["not_claimed_contexts"] = [{**u.to_dict(), "definition": untested_definition(u, state.definitions)}
                                      for u in getattr(context, "not_claimed_contexts", ())]
    record["embedding"] = None if embedding is None else EmbeddingTest.from_detector(embedding.to_dict())
    record["attribution"], record["conditional"] = _d(state.attribution), _d(conditional)
    record["contexts_only_in_production"] = list(contexts_only_in_production)
    in_contexts = context is not None and any(t.drifted for t in context.tests
                                              if not (t.kind == "slice_share" and t.name in discovered))
    record["is_shift"] = in_contexts or any(r is not None and r.is_shift for r in (embedding, conditional))
    return SemanticSection.model_validate(record)


def _share_test(share: dict[str, Any]) -> dict[str, Any]:
    test = {**share["test"], **{k: v for k, v in share.items() if k != "test"}}
    test["kind"] = test.get("kind") or "slice_share"
    test["details"] = {**(test.get("details") or {}),
                       **{k: share[k] for k in ("benchmark_share", "production_share") if share.get(k) is not None}}
    return test


def slice_records(evaluation: Any, titles: dict[str, str]) -> list[SliceRecord]:
    if evaluation is None:
        return []
    out = []
    for s in evaluation.slices:
        record = {**s.to_dict(), "title": titles.get(s.name), "gap": _oriented_gap(evaluation.metric, s.gap_vs_overall)}
        # One headline p-value per slice: its benchmark→production change test when that ran, else
        # the test of its gap to the rest (discovered slices are not change-tested on their own rows).
        adjusted = record.get("p_value_adjusted")
        if adjusted is None or adjusted != adjusted:
            record.update(p_value=record.get("gap_p_value"), p_value_adjusted=record.get("gap_p_value_adjusted"),
                          p_value_test="gap")
        else:
            record["p_value_test"] = "change"
        out.append(SliceRecord.model_validate(record))
    return out


def _oriented_gap(metric: str, gap_vs_overall: float) -> float | None:
    """overall − slice, so that positive means the slice is worse (lower-is-better flipped)."""
    if gap_vs_overall is None or not np.isfinite(gap_vs_overall):
        return None
    return float(gap_vs_overall if metric_registry.lower_is_better(metric) else -gap_vs_overall)


def audit_title(inp: Any) -> str:
    if inp.title:
        return inp.title
    pack_title = getattr(inp.pack, "title", None) or inp.pack.name
    b = inp.benchmark_ref.get("name") or inp.benchmark_ref.get("id")
    p = inp.production_ref.get("name") or inp.production_ref.get("id")
    return f"{pack_title}: {b} vs {p}"


def audit_evidence(inp: Any, state: Any) -> AuditEvidence:
    """The AuditResult before its conclusions: every section from the corrected detector results."""
    ctx, pack = state.ctx, inp.pack
    columns = ctx.columns
    overall = overall_section(state.overall_eval)
    drifted = [t.name for t in (state.covariate.features if state.covariate is not None else ()) if t.drifted]
    # a column the input test compared as categories (chi-square) is drawn as categories
    as_categories = {t.name for t in (state.covariate.features if state.covariate is not None else ())
                     if t.method == "chi2"}
    distributions = feature_distributions(ctx.benchmark, inp.production, drifted[:12],
                                          categorical=as_categories) if drifted else {}
    prior = trusted_prior(ctx, state.prior, state.context, state.embedding)
    return AuditEvidence.model_validate(dict(
        id=inp.audit_id, created_at=datetime.now(timezone.utc).isoformat(), title=audit_title(inp),
        domain=pack.name, domain_title=getattr(pack, "title", None) or pack.name,
        synthetic=bool(inp.benchmark.attrs.get("synthetic") or inp.production.attrs.get("synthetic")),
        benchmark={**inp.benchmark_ref, "n_rows": _n_rows(ctx, "benchmark", len(ctx.benchmark))},
        production={**inp.production_ref, "n_rows": _n_rows(ctx, "production", len(inp.production)),
                    "labelled": columns.production_label is not None,
                    "n_labelled": _n_labelled(state, columns, len(inp.production))},
        overall=overall,
        covariate=covariate_section(state.covariate, state.multivariate, state.outputs, distributions),
        label=label_section(prior, state.concept, state.estimates, overall),
        semantic=semantic_section(state, columns.contexts_only_in_production),
        slices=slice_records(state.evaluation, {s.name: s.title for s in pack.slices if s.title}),
        label_quality=None if state.label_quality is None else LabelQuality.from_detector(
            to_jsonable(state.label_quality.to_dict())),
        discovery=None if state.discovered is None else {
            k: v for k, v in state.discovered.to_dict().items() if k != "slices"},
        columns=columns.to_dict(),
        parameters=to_jsonable({
            **ctx.options.model_dump(), **ctx.parameters,
            "domain_pack": pack.name, "domain_pack_version": getattr(pack, "version", None),
            "primary_metric": pack.primary_metric, "min_slice_size": ctx.min_slice_size,
            "n_tests_corrected": state.n_tests, "classes": ctx.classes,
            "severity_priors": asdict(SeverityPriors()), "engine": _engine(ctx)}),
        notes=ctx.notes))


def _n_labelled(state: Any, columns: Any, n_rows: int) -> int:
    """Production rows carrying a label: all, none or (partly labelled) the labelled ones."""
    if columns.production_label is None:
        return 0
    labelled = getattr(state, "labelled", None)
    return n_rows if labelled is None else labelled.n


def _n_rows(ctx: Any, side: str, in_memory: int) -> int:
    """Rows of the whole dataset: the Dask engine audits a sample of them."""
    return in_memory if ctx.summaries is None else int(getattr(ctx.summaries, side).n_rows)


def _engine(ctx: Any) -> dict[str, Any]:
    if ctx.summaries is None:
        return {"name": "pandas"}
    return describe(dict(ctx.summaries.description), outcomes_exact=outcomes_exact(ctx))
