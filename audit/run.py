"""The audit as one function: two tables, their column roles, a domain pack and typed options in;
the typed :class:`reports.result.AuditResult` and its renderings out.

Everything the service, the CLI, monitors and benchmark rounds run goes through
:func:`run_audit`. What only a deployment has (a database, settings, an image cache, a Dask
cluster) stays with the caller and comes in as values: a benchmark-side fit cache, the exact
summaries an engine computed over every row, the data-quality warnings it found.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import pandas as pd

from audit.engine import EngineSummaries
from audit.options import AuditOptions
from audit.pipeline import AuditInput, AuditOutcome, Progress, run
from reports.result import AuditResult

__all__ = ["AuditData", "AuditOutcome", "Progress", "run_audit"]


@dataclass(frozen=True)
class AuditData:
    """One side of an audit.

    Parameters
    ----------
    frame : pandas.DataFrame of shape (n_rows, n_columns)
        The rows, already read, typed and validated by the caller.
    roles : mapping of str to str
        Column name -> role (``feature``, ``context``, ``label``, ``prediction``, ``score``, ``id``, ...).
    ref : mapping, optional
        What the result says of this dataset: its ``id`` and ``name`` (default ``"benchmark"`` /
        ``"production"``) and, for data carrying images, what was derived from them.
    digest : str, optional
        A content hash of the stored benchmark, the key of its cached fits; None: the cache hashes
        the frame.
    """

    frame: pd.DataFrame
    roles: Mapping[str, str]
    ref: Mapping[str, Any] = field(default_factory=dict)
    digest: str | None = None


def _ref(data: AuditData, default: str) -> dict[str, Any]:
    return {"id": default, "name": default, **data.ref}


def run_audit(benchmark: AuditData, production: AuditData, *, pack: Any, options: AuditOptions | None = None,
              progress: Progress | None = None, annotations: tuple[pd.DataFrame, dict[str, str]] | None = None,
              audit_id: str = "local", title: str | None = None, reference_cache: Any = None,
              summaries: EngineSummaries | None = None,
              data_quality: Mapping[str, list] | None = None,
              extra_parameters: Mapping[str, Any] | None = None,
              report_images: Callable[[AuditResult, pd.DataFrame], Any] | None = None,
              render: bool = True) -> AuditOutcome:
    """Audit ``production`` against ``benchmark`` under ``pack``.

    Parameters
    ----------
    benchmark, production : AuditData
        The two sides; the benchmark carries labels, production may carry none, some or all.
    pack : domains.DomainPack
        The domain pack: context columns, expert slices, metrics, expectations.
    options : AuditOptions, optional
        Significance level, correction, seed, labelling budget...; default: every default.
    progress : callable(fraction, stage), optional
        Called as the stages finish, with the fraction done in [0, 1) and the next stage's label.
    annotations : (DataFrame, roles), optional
        Per-annotator labels ``(item_id, annotator_id, label)`` for the label-quality section.
    audit_id, title : str, optional
        How the result and the report name the audit.
    reference_cache : ReferenceCache, optional
        Benchmark-side fits kept across audits (:mod:`audit.pipeline.reference_cache`); the result
        is the same without it, only slower for a benchmark seen before.
    summaries, data_quality : optional
        From an engine that scanned every row and passes samples as the frames: its exact counts
        and sketches (:class:`audit.engine.EngineSummaries`), and the out-of-range warnings it
        found (``{"benchmark": [...], "production": [...]}``); None: computed from the frames.
    extra_parameters : mapping, optional
        Recorded in the result's ``parameters`` beside the options, e.g. the benchmark series the
        service built the benchmark from (``{"benchmark_series": {...}}``).
    report_images : callable(result, production) -> reports.report_images.ReportImages, optional
        What images add to the HTML report (thumbnails read from the caller's image cache, notes
        beside skin-tone findings); called once, before the report is rendered.
    render : bool, default=True
        False: compute the result only (``html`` and ``markdown`` empty). The result is final before
        rendering, which costs about a third of an audit of a few hundred rows; simulations skip it.

    Returns
    -------
    AuditOutcome
        ``result`` (the typed AuditResult), ``html``, ``markdown``, the next-round plan as
        ``exports`` and, when asked for, the Evidently ``companion_html``.

    Raises
    ------
    audit.errors.AuditInputError
        The two tables share nothing to compare.
    """
    inp = AuditInput(audit_id=audit_id, benchmark=benchmark.frame, production=production.frame,
                     benchmark_roles=dict(benchmark.roles), production_roles=dict(production.roles),
                     benchmark_ref=_ref(benchmark, "benchmark"), production_ref=_ref(production, "production"),
                     pack=pack, options=options if options is not None else AuditOptions(), annotations=annotations,
                     title=title, summaries=summaries, reference_cache=reference_cache,
                     benchmark_digest=benchmark.digest,
                     data_quality=None if data_quality is None else dict(data_quality),
                     extra_parameters=dict(extra_parameters or {}), report_images=report_images,
                     render=render)
    return run(inp, progress or (lambda fraction, stage: None))
