"""An audit on the Dask engine: scan both datasets' partitions once, then run the audit pipeline
on the uniform samples with the exact counts and sketches standing in wherever they suffice
(:mod:`audit.engine.exact`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np
from datasketches import kll_doubles_sketch

from audit import AuditData, AuditOptions, run_audit
from audit.engine.counts import ALL_ROWS
from audit.pipeline import check_auditable
from audit.pipeline.columns import resolve_columns
from audit.pipeline.reference_cache import cache_key
from domains import parse
from domains.expressions import columns_used
from service.audits.engine import SKETCH_K
from service.audits.engine.cluster import get_client
from service.audits.engine.datasets import EmptyDataset, ParquetDataset
from service.audits.engine.quality import range_warnings
from service.audits.engine.scan import Scan, ScanPlan, scan_files
from service.datasets import frame_checks
from service.errors import InvalidRequest, audit_input_errors
from service.roles import infer_roles, parse_schema

Progress = Callable[[float, str], None]
SCAN_SHARE = 0.5  # of the progress bar: scanning; the rest is the audit on the sample


@dataclass(frozen=True)
class EngineSummaries:
    """What the pipeline's stages read instead of rows when the Dask engine ran."""

    benchmark: Scan
    production: Scan
    count_slices: Callable[[Mapping[str, str]], dict[str, tuple[Any, Any]]]  # name -> (bench, prod) OutcomeCounts
    description: Mapping[str, Any]  # becomes parameters.engine

    def outcomes(self, name: str = ALL_ROWS):
        return self.benchmark.outcomes.get(name), self.production.outcomes.get(name)

    def label_counts(self) -> tuple[list[str], np.ndarray]:
        """Production rows per label (every row)."""
        counts = self.production.outcomes[ALL_ROWS]
        classes = sorted(counts.classes())
        return classes, counts.labels(classes)


def scan_plan(dataset: ParquetDataset, columns, pack, *, labelled: bool, sample_rows: int, seed: int,
              keep: tuple[str, ...] = ()) -> ScanPlan:
    """The pass for one side: summarise the compared columns, count outcomes overall and per
    expert slice, and keep ``sample_rows`` rows in expectation (with the ``keep`` columns too)."""
    compared = [c for c in (*columns.features, *columns.contexts) if c in dataset.columns]
    extra = [c for c in (*columns.scores, *columns.embeddings, columns.id, *keep) if c and c in dataset.columns]
    slices = {s.name: s.expression for s in pack.slices if _evaluable(s.expression, dataset.columns)}
    return ScanPlan(columns=tuple(compared), numeric=tuple(c for c in compared if c in dataset.numeric),
                    label=columns.label if labelled else None, prediction=columns.prediction, slices=slices,
                    sample_fraction=min(1.0, sample_rows / max(dataset.n_rows, 1)), random_state=seed,
                    sketch_k=SKETCH_K, extra=tuple(extra))


def benchmark_key(dataset: ParquetDataset, plan: ScanPlan) -> str:
    """What a benchmark's scan depends on: its files (fingerprint) and everything in the plan."""
    return cache_key("dask-scan-v2", dataset.fingerprint, plan.columns, plan.numeric, plan.label, plan.prediction,
                     dict(plan.slices), plan.sample_fraction, plan.random_state, plan.sketch_k, plan.extra)


def _evaluable(expression: str, columns) -> bool:
    return all(c in columns for c in columns_used(parse(expression)))


def scan_pair(client, benchmark: ParquetDataset, production: ParquetDataset, columns, pack, *,
              options: AuditOptions, progress: Progress, cache=None,
              keep: tuple[str, ...] = ()) -> tuple[Scan, Scan, dict[str, Any]]:
    sample_rows, seed = options.sample_rows, options.seed
    plan_b = scan_plan(benchmark, columns, pack, labelled=True, sample_rows=sample_rows, seed=seed)
    plan_p = scan_plan(production, columns, pack, labelled=columns.production_label is not None,
                       sample_rows=sample_rows, seed=seed + 1, keep=keep)

    def scan_benchmark() -> Scan:
        return scan_files(client, list(benchmark.files), plan_b, lambda f: progress(SCAN_SHARE * f / 2,
                                                                                    "scanning the benchmark"))
    if cache is not None:  # the benchmark side of a monitor or a repeated audit is scanned once
        scan_b = cache.get_or_compute(benchmark_key(benchmark, plan_b), scan_benchmark)
    else:
        scan_b = scan_benchmark()
    scan_p = scan_files(client, list(production.files), plan_p,
                        lambda f: progress(SCAN_SHARE * (0.5 + f / 2), "scanning production"))
    description = {
        "name": "dask", "n_partitions": {"benchmark": len(benchmark.files), "production": len(production.files)},
        "sample": {"rows_requested": sample_rows, "benchmark_rows": len(scan_b.sample),
                   "production_rows": len(scan_p.sample), "method": "Bernoulli per row, seeded per partition"},
        "sketch": {"type": "KLL (Apache DataSketches)", "k": SKETCH_K, "rank_error": _rank_error(SKETCH_K),
                   "confidence": 0.99},
    }
    return scan_b, scan_p, description


def _rank_error(k: int) -> float:
    return float(kll_doubles_sketch.get_normalized_rank_error(k, False))


def slice_counter(client, benchmark: ParquetDataset, production: ParquetDataset, columns) -> Callable:
    """A second, narrow pass: outcome counts of slices found on the sample (discovered slices,
    untested contexts), reading only the columns their definitions use."""
    def count(definitions: Mapping[str, str]) -> dict[str, tuple[Any, Any]]:
        if not definitions:
            return {}
        used = sorted({c for d in definitions.values() for c in columns_used(parse(d))})
        out = []
        for dataset, label in ((benchmark, columns.label), (production, columns.production_label)):
            ok = {n: d for n, d in definitions.items() if _evaluable(d, dataset.columns)}
            plan = ScanPlan(columns=(), numeric=(), label=label, prediction=columns.prediction, slices=ok,
                            extra=tuple(c for c in used if c in dataset.columns))
            out.append(scan_files(client, list(dataset.files), plan).outcomes)
        return {n: (out[0][n], out[1][n]) for n in definitions if n in out[0] and n in out[1]}
    return count


def audit_parquet(benchmark: ParquetDataset, production: ParquetDataset, *, pack: Any,
                  benchmark_roles: dict[str, str], production_roles: dict[str, str], options: AuditOptions,
                  progress: Progress, refs: tuple[dict, dict], client: Any = None, scheduler: str | None = None,
                  cache: Any = None, audit_id: str = "local", annotations: Any = None, title: str | None = None,
                  keep: tuple[str, ...] = (), report_images: Callable[[Any, Any], Any] | None = None,
                  notes: Mapping[str, Any] | None = None, extra_parameters: Mapping[str, Any] | None = None):
    """Audit two Parquet datasets on a dask.distributed cluster; returns the pipeline's AuditOutcome.

    ``keep`` names columns the production sample keeps although no test reads them (the image
    hashes thumbnails are found by); ``report_images(result, production_sample)`` gives what the
    images add to the report (thumbnails of sampled rows); ``notes`` are added to ``parameters.engine``,
    ``extra_parameters`` to ``parameters``."""
    columns = resolve_columns(benchmark_roles, production_roles)
    with audit_input_errors():
        check_auditable(columns)  # before the cluster scans anything
    client = client or get_client(scheduler)
    scan_b, scan_p, description = scan_pair(client, benchmark, production, columns, pack, options=options,
                                            progress=progress, cache=cache, keep=keep)
    description = {**description, **(notes or {})}
    summaries = EngineSummaries(scan_b, scan_p, slice_counter(client, benchmark, production, columns), description)
    quality = {"benchmark": range_warnings(client, benchmark, pack, benchmark_roles),
               "production": range_warnings(client, production, pack, production_roles)}
    with audit_input_errors():
        return run_audit(
            AuditData(scan_b.sample, benchmark_roles, refs[0],
                      digest=f"dask-sample:{benchmark.fingerprint}:{len(scan_b.sample)}"),
            AuditData(scan_p.sample, production_roles, refs[1]), pack=pack, options=options,
            annotations=annotations, audit_id=audit_id, title=title, reference_cache=cache, summaries=summaries,
            data_quality=quality, extra_parameters=extra_parameters, report_images=report_images,
            progress=lambda f, stage: progress(SCAN_SHARE + (1 - SCAN_SHARE) * f, stage))


def parquet_roles(dataset: ParquetDataset, *, schema: Any, pack: Any) -> dict[str, str]:
    """Column roles as for an upload, from the column names, the schema and the pack; the first
    rows are validated with the same expectations (the full data is never loaded)."""
    head = dataset.head()
    column_roles = infer_roles(head.columns, schema=parse_schema(schema, head.columns, dataset.name),
                                context_columns=[c.name for c in pack.context])
    checked = frame_checks.check_frame(head, pack, column_roles)
    if not checked.ok:  # out-of-range values are warnings, counted over every partition by range_warnings
        raise frame_checks.refuse(dataset.name, checked.report, where=" on its first rows")
    return column_roles


def audit_paths(benchmark: str, production: str, *, pack: Any, schema: Any, options: AuditOptions,
                progress: Progress, scheduler: str | None = None, annotations: Any = None):
    """The CLI's ``--engine dask``: Parquet files, directories or globs in, an AuditOutcome out."""
    try:
        datasets = [ParquetDataset.open(path) for path in (benchmark, production)]
    except EmptyDataset as exc:
        raise InvalidRequest(str(exc), code="empty_dataset") from None
    except ValueError as exc:  # e.g. files whose columns disagree
        raise InvalidRequest(str(exc), code="schema_mismatch") from None
    roles = [parquet_roles(d, schema=schema, pack=pack) for d in datasets]
    refs = [{"id": d.name, "name": d.name, "fingerprint": d.fingerprint} for d in datasets]
    return audit_parquet(datasets[0], datasets[1], pack=pack, benchmark_roles=roles[0], production_roles=roles[1],
                         options=options, progress=progress, refs=(refs[0], refs[1]),
                         scheduler=scheduler, annotations=annotations)
