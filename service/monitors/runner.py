"""One monitor run in the service: take new rows, register them, audit them, alert.

The new rows become a production dataset and a normal audit (so a run's ``audit_id`` opens a
real audit and report). The benchmark side is computed once per monitor and reused: its frame
read from Parquet, its column roles and the domain pack are kept in memory
(:class:`BenchmarkCache`), and everything the audit fits on the benchmark alone (detectors'
reference summaries, the performance estimators' bootstrap) goes through the runtime's
:class:`~service.pipeline.reference_cache.ReferenceCache` (memory and ``data_dir/cache/reference``),
so a run costs about the tests on its new rows (benchmarks/monitoring.py measures it).
"""
from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any

import pandas as pd

from service.errors import ServiceError, ValidationFailed
from service.monitors import budget, findings
from service.monitors.alerting import ACTIVE, payload, update_alerts
from service.monitors.decide import RunDecision, decide_run
from service.monitors.models import MonitorRow
from service.monitors.outbox import Outbox, message
from service.monitors.sources import Batch, take_directory, take_sql
from service.monitors.store import MonitorStore, now

log = logging.getLogger("contextshift.monitors")


@dataclass(frozen=True)
class BenchmarkSide:
    frame: pd.DataFrame
    roles: dict[str, str]
    ref: dict[str, Any]
    pack: Any
    digest: str | None = None  # the benchmark's content hash, for the reference cache's keys


class BenchmarkCache:
    """The benchmark side of each monitor, read once (thread-safe, bounded)."""

    def __init__(self, max_items: int = 8) -> None:
        self.max_items, self._items, self._lock = max_items, {}, threading.Lock()
        self.hits = self.misses = 0

    def get(self, runtime: Any, benchmark_id: str, domain: str) -> BenchmarkSide:
        key = (benchmark_id, domain)
        with self._lock:
            if key in self._items:
                self.hits += 1
                return self._items[key]
        from service.roles import roles_for_audit

        row, pack = runtime.datasets.get(benchmark_id), runtime.packs.get(domain)
        # roles under the monitor's pack, as the API's audits resolve them (a benchmark uploaded
        # without a domain still gets the pack's context columns)
        side = BenchmarkSide(frame=runtime.datasets.load_frame(benchmark_id),
                             roles=roles_for_audit(row.columns, context_columns=[c.name for c in pack.context]),
                             ref={"id": row.id, "name": row.name}, pack=pack, digest=row.sha256)
        with self._lock:
            self.misses += 1
            if len(self._items) >= self.max_items:
                self._items.pop(next(iter(self._items)))
            self._items[key] = side
        return side


def production_roles(frame: pd.DataFrame, side: BenchmarkSide) -> dict[str, str]:
    """Columns the benchmark has keep its roles (a schema given at upload holds); others are inferred."""
    from service import roles

    inferred = roles.infer_roles(frame.columns, context_columns=[c.name for c in side.pack.context])
    return {c: side.roles.get(c, inferred[c]) for c in frame.columns}


def take(monitor: MonitorRow, store: MonitorStore, settings: Any) -> Batch:
    source = monitor.source
    if source["type"] == "directory":
        return take_directory(source, store.taken_files(monitor.id), list(settings.monitor_roots),
                              max_rows=settings.monitor_max_rows_per_run, max_bytes=settings.monitor_max_bytes_per_run)
    url = settings.monitor_databases.get(source["database"])
    if url is None:
        raise ServiceError(f"Database {source['database']!r} is no longer configured.", code="unknown_database")
    return take_sql(source, url, monitor.watermark, max_rows=settings.monitor_max_rows_per_run,
                    timeout_s=settings.monitor_query_timeout_s)


def register(runtime: Any, monitor: MonitorRow, run_id: str, frame: pd.DataFrame,
             side: BenchmarkSide) -> tuple[Any, dict[str, str]]:
    """Validate the new rows like an upload and store them as a production dataset."""
    from service import roles, validation
    from service.packs import view

    column_roles = production_roles(frame, side)
    expectations = validation.schema_expectations(frame, column_roles)
    expectations += validation.pack_expectations(view(side.pack).expectations, side.pack.name, frame.columns)
    report = validation.validate(frame, expectations)
    if not report["success"]:
        failures = [r for r in report["results"] if not r["success"]]
        raise ValidationFailed(f"The new rows failed {len(failures)} data expectation(s); first: "
                               f"{failures[0]['expectation']} on column {failures[0]['column']!r}.",
                               details={"failures": failures[:20]})
    digest = hashlib.sha256(pd.util.hash_pandas_object(frame, index=False).values.tobytes()).hexdigest()
    row = runtime.datasets.create(name=f"{monitor.name} / {run_id}", role="production", domain=side.pack.name,
                                  frame=frame, columns=roles.describe_columns(frame, column_roles),
                                  validation=report, sha256=digest)
    return row, column_roles


def audit(runtime: Any, monitor: MonitorRow, dataset: Any, column_roles: dict[str, str], frame: pd.DataFrame,
          side: BenchmarkSide, alpha: float) -> tuple[str, dict[str, Any]]:
    """A normal audit row, executed here with the cached benchmark side and its cached fits."""
    from service.pipeline import AuditInput, run_audit
    from service.schemas import AuditOptions
    from service.worker import atomic_write_text

    options = AuditOptions(**{k: v for k, v in monitor.options.items() if k in AuditOptions.model_fields})
    options = {**options.model_dump(), "alpha": alpha}
    audits = runtime.audits
    row = audits.create(benchmark_id=monitor.benchmark_id, production_id=dataset.id, domain=monitor.domain,
                        options=options)
    if audits.mark_running(row.id) is False:  # the audit store is compare-and-set: another instance claimed it
        raise ServiceError(f"Audit {row.id} was claimed by another instance.", code="audit_claimed")
    try:
        outcome = run_audit(AuditInput(
            audit_id=row.id, benchmark=side.frame, production=frame, benchmark_roles=side.roles,
            production_roles=column_roles, benchmark_ref=side.ref,
            production_ref={"id": dataset.id, "name": dataset.name}, pack=side.pack, options=options,
            reference_cache=runtime.reference_cache(), benchmark_digest=side.digest),
            progress=lambda p, stage: audits.set_progress(row.id, p, stage))
        atomic_write_text(audits.reports_dir / f"{row.id}.html", outcome.html)
        atomic_write_text(audits.reports_dir / f"{row.id}.md", outcome.markdown)
        for fmt, text in (outcome.exports or {}).items():
            atomic_write_text(audits.reports_dir / f"{row.id}.next-round.{fmt}", text)
        audits.mark_succeeded(row.id, outcome.result, f"{row.id}.html")
    except BaseException as exc:
        audits.mark_failed(row.id, {"code": "audit_error", "message": f"{type(exc).__name__}: {exc}",
                                    "details": {"trace": traceback.format_exc(limit=3)[-2000:]}})
        raise
    return row.id, outcome.result


def execute(runtime: Any, store: MonitorStore, cache: BenchmarkCache, run_id: str, *,
            outbox: Outbox | None = None) -> str:
    """Run a claimed run to its end; returns the final status (errors are stored, not raised)."""
    monitor = store.get(store.get_run(run_id).monitor_id)
    clock = [time.perf_counter()]

    def lap() -> float:
        clock.append(time.perf_counter())
        return round(clock[-1] - clock[-2], 3)

    try:
        batch = take(monitor, store, runtime.settings)
        took = lap()
        # What was taken is taken, whatever happens next: a bad file must not fail every later run
        # (nor be re-read by every later run when it was all the folder held).
        if batch.files:
            store.record_files(monitor.id, run_id, batch.files)
        if batch.empty:
            if outbox is not None:  # a quiet run is a retry point for messages still pending
                outbox.deliver_pending(monitor_id=monitor.id, due_only=False)
            store.finish_run(run_id, "no_new_data", n_rows=0,
                             **({"summary": {"notes": list(batch.notes)}} if batch.notes else {}))
            return "no_new_data"
        if batch.watermark:
            store.update(monitor.id, watermark=batch.watermark)
        side = cache.get(runtime, monitor.benchmark_id, monitor.domain)
        cached = lap()
        dataset, column_roles = register(runtime, monitor, run_id, batch.frame, side)
        registered = lap()
        k = monitor.n_tested + 1
        alpha_k = budget.run_alpha(monitor.alpha, k)
        audit_id, result = audit(runtime, monitor, dataset, column_roles, batch.frame, side, alpha_k)
        audited = lap()
        active = store.alerts(monitor_id=monitor.id, states=ACTIVE)
        decision = decide_run(result, benchmark=side.frame, production=batch.frame, benchmark_roles=side.roles,
                              production_roles=column_roles, harm_state=monitor.harm_state,
                              open_keys=[a.key for a in active], alpha=monitor.alpha,
                              tolerance=float(monitor.options.get("harm_tolerance", 0.05)),
                              min_severity=(monitor.alerts or {}).get("min_severity", "medium"))
        store.update(monitor.id, n_tested=k, alpha_spent=budget.spent(monitor.alpha, k),
                     harm_state=decision.harm_state)
        summary = {**findings.trend_summary(result), "harm": [c.__dict__ for c in decision.checks],
                   "notes": list(batch.notes),
                   "timings": {"take_s": took, "benchmark_s": cached, "register_s": registered, "audit_s": audited}}
        store.update_run(run_id, n_rows=len(batch.frame), audit_id=audit_id, alpha=alpha_k,
                         verdict=result.get("verdict"), summary=summary)
        alert_ids = _alerts(store, monitor, run_id, decision, active)
        if outbox is not None:  # never raises: a dead receiver or a refused URL fails nothing else
            outbox.deliver_pending(monitor_id=monitor.id, due_only=False)
        store.finish_run(run_id, "succeeded", alert_ids=alert_ids)
        return "succeeded"
    except Exception as exc:  # the run fails, the scheduler and service stay up
        if not isinstance(exc, ServiceError):
            log.exception("monitor run %s failed", run_id)
        error = exc.to_body()["error"] if isinstance(exc, ServiceError) else {
            "code": "run_error", "message": f"{type(exc).__name__}: {exc}",
            "details": {"trace": traceback.format_exc(limit=3)[-2000:]}}
        store.finish_run(run_id, "failed", error=error)
        return "failed"


def _alerts(store: MonitorStore, monitor: MonitorRow, run_id: str, decision: RunDecision,
            active: list[Any]) -> list[str]:
    update = update_alerts(active, decision.alerting, decision.present_keys, monitor_id=monitor.id, run_id=run_id,
                           at=now())
    url = (monitor.alerts or {}).get("webhook")
    run = store.get_run(run_id)
    run_info = {"id": run_id, "audit_id": run.audit_id, "n_rows": run.n_rows, "verdict": run.verdict,
                "started_at": run.started_at, "report": f"/v1/monitors/{monitor.id}/report"}
    info = {"id": monitor.id, "name": monitor.name, "benchmark": monitor.benchmark_id, "domain": monitor.domain}
    at = now()
    # the messages are written with the alerts they announce: none is lost if the receiver is down
    messages = [message(monitor.id, run_id, event, [a.id for a in rows],
                        json.loads(json.dumps(payload(info, run_info, rows, event), default=str)), at)
                for event, rows in (("opened", update.opened), ("resolved", update.resolved)) if url and rows]
    store.save_alerts(update.changed, messages)
    return [a.id for a in update.opened]
