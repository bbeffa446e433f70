"""One monitor run in the service: take new rows, register them, audit them, alert.

The run itself is :func:`service.monitors.run_path.execute_run`, shared with ``contextshift
monitor run --config``; this module is its database store (:class:`ServiceRunStore`). The new rows
become a production dataset and a normal audit (so a run's ``audit_id`` opens a real audit and
report). The benchmark side is computed once per monitor and reused: its frame read from Parquet,
its column roles and the domain pack are kept in memory (:class:`BenchmarkCache`), and everything
the audit fits on the benchmark alone (detectors' reference summaries, the performance estimators'
bootstrap) goes through the runtime's :class:`~audit.pipeline.reference_cache.ReferenceCache`
(memory and ``data_dir/cache/reference``), so a run costs about the tests on its new rows
(benchmarks/monitoring.py measures it).
"""
from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

import pandas as pd

from audit.options import AuditOptions
from service.audits.schemas import AuditRequest
from service.audits.worker import atomic_write_text
from service.errors import ServiceError, audit_input_errors
from service.monitors import budget, findings
from service.monitors.alerting import ACTIVE, payload
from service.monitors.models import MonitorRow
from service.monitors.outbox import Outbox, message
from service.monitors.run_path import (
    BenchmarkSide,
    MonitorView,
    RunRecord,
    check_engine,
    checks_summary,
    execute_run,
    production_roles,
    run_error,
)
from service.monitors.sources import Batch, Source, SourceLimits, source_for
from service.monitors.store import MonitorStore, now
from service.roles import describe_columns, roles_for_audit

__all__ = ["BenchmarkSide", "BenchmarkCache", "ServiceRunStore", "execute", "production_roles", "take",
           "check_engine", "monitor_source"]

class BenchmarkCache:
    """The benchmark side of each monitor, read once (thread-safe, bounded)."""

    def __init__(self, max_items: int = 8) -> None:
        self.max_items, self._lock = max_items, threading.Lock()
        self._items: dict[tuple[str, str], BenchmarkSide] = {}  # (benchmark id, domain) -> its side
        self.hits = self.misses = 0

    def get(self, runtime: Any, benchmark_id: str, domain: str) -> BenchmarkSide:
        key = (benchmark_id, domain)
        with self._lock:
            if key in self._items:
                self.hits += 1
                return self._items[key]

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


def monitor_source(monitor: Any, settings: Any) -> Source:
    """A stored monitor's source, read within this process's roots, databases and limits."""
    return source_for(monitor.source, limits=SourceLimits.of(settings), roots=list(settings.monitor_roots),
                      databases=settings.monitor_databases)


def take(monitor: MonitorRow, store: MonitorStore, settings: Any) -> Batch:
    return monitor_source(monitor, settings).take(store.taken_files(monitor.id), monitor.watermark)


class ServiceRunStore:
    """A run's state in the service's database: runs, taken files, alerts and the webhook outbox."""

    def __init__(self, runtime: Any, store: MonitorStore, cache: BenchmarkCache, run_id: str,
                 outbox: Outbox | None) -> None:
        self.runtime, self.store, self.cache, self.outbox, self.run_id = runtime, store, cache, outbox, run_id
        self.row: MonitorRow = store.get(store.get_run(run_id).monitor_id)
        row = self.row
        self.monitor = MonitorView(id=row.id, name=row.name, alpha=row.alpha, options=dict(row.options or {}),
                                   alerts=dict(row.alerts or {}), n_tested=row.n_tested,
                                   detector_state=row.detector_state or {})
        self.batch: Batch | None = None

    def take(self) -> Batch:
        self.batch = take(self.row, self.store, self.runtime.settings)
        return self.batch

    def _taken(self) -> None:
        """What was taken is taken once the run ends, whatever its outcome: a bad file must not fail
        every later run (nor be re-read by every later run when it was all the folder held). A run
        whose process is killed records nothing, so the next run takes the same rows and, from the
        same detector state, decides as the killed run would have."""
        batch = self.batch
        if batch is None:
            return
        if batch.files:
            self.store.record_files(self.row.id, self.run_id, batch.files)
        if not batch.empty and batch.watermark:
            self.store.update(self.row.id, watermark=batch.watermark)

    def no_new_data(self, run_id: str, batch: Batch) -> None:
        self._taken()
        if self.outbox is not None:  # a quiet run is a retry point for messages still pending
            self.outbox.deliver_pending(monitor_id=self.row.id, due_only=False)
        self.store.finish_run(run_id, "no_new_data", n_rows=0,
                              **({"summary": {"notes": list(batch.notes)}} if batch.notes else {}))

    def benchmark(self) -> BenchmarkSide:
        check_engine(self.monitor.options)  # a monitor defined before the check runs no silent pandas
        return self.cache.get(self.runtime, self.row.benchmark_id, self.row.domain)

    def audit(self, run_id: str, batch: Batch, roles: dict[str, str], validation: dict, side: BenchmarkSide,
              alpha_k: float) -> tuple[str, dict[str, Any]]:
        dataset = register(self.runtime, self.row, run_id, batch.frame, roles, validation, side)
        return audit(self.runtime, self.row, dataset, roles, batch.frame, side, alpha_k)

    def active_alerts(self) -> list[Any]:
        return self.store.alerts(monitor_id=self.row.id, states=ACTIVE)

    def save(self, record: RunRecord) -> None:
        row, store, batch = self.row, self.store, record.batch
        assert batch.frame is not None  # only a batch with rows is audited (execute_run)
        summary = {**findings.trend_summary(record.result), **checks_summary(record.decision),
                   "notes": list(batch.notes), "timings": record.timings}
        run = {"n_rows": len(batch.frame), "audit_id": record.audit_id, "alpha": record.alpha_k,
               "verdict": record.result.verdict.model_dump(mode="json"), "summary": summary,
               "alert_ids": [a.id for a in record.update.opened]}
        monitor = {"n_tested": record.k, "alpha_spent": budget.spent(row.alpha, record.k),
                   "detector_state": record.decision.detector_state,
                   **({"watermark": batch.watermark} if not batch.empty and batch.watermark else {})}
        # one transaction: rows taken but never counted (or counted twice) would change every later decision
        store.save_run(row.id, record.run_id, files=list(batch.files), monitor=monitor, run=run,
                       alerts=record.update.changed, messages=_messages(store, row, record, run))
        if self.outbox is not None:  # never raises: a dead receiver or a refused URL fails nothing else
            self.outbox.deliver_pending(monitor_id=row.id, due_only=False)
        # killed before this line, recovery finishes the run as succeeded: its decisions are saved
        store.finish_run(record.run_id, "succeeded")

    def fail(self, run_id: str, error: dict[str, Any]) -> None:
        if not self.store.run_open(run_id):  # recovery ended it: its rows are the next run's, untaken
            return
        self._taken()
        self.store.finish_run(run_id, "failed", error=error)


def register(runtime: Any, monitor: MonitorRow, run_id: str, frame: pd.DataFrame, column_roles: dict[str, str],
             report: dict, side: BenchmarkSide) -> Any:
    """Store the new rows (validated by the run) as a production dataset."""
    digest = hashlib.sha256(pd.util.hash_pandas_object(frame, index=False).values.tobytes()).hexdigest()
    return runtime.datasets.create(name=f"{monitor.name} / {run_id}", role="production", domain=side.pack.name,
                                   frame=frame, columns=describe_columns(frame, column_roles),
                                   validation=report, sha256=digest)


def audit(runtime: Any, monitor: MonitorRow, dataset: Any, column_roles: dict[str, str], frame: pd.DataFrame,
          side: BenchmarkSide, alpha: float) -> tuple[str, dict[str, Any]]:
    """A normal audit row, executed here with the cached benchmark side and its cached fits."""
    # lazy: the audit pipeline (SciPy, ~2 s) would load at API start-up, which imports this module
    from audit import AuditData, run_audit

    options = AuditOptions(**{**{k: v for k, v in monitor.options.items() if k in AuditOptions.model_fields},
                              "alpha": alpha})
    audits = runtime.audits
    row = audits.create(benchmark_id=monitor.benchmark_id, production_id=dataset.id, domain=monitor.domain,
                        options=AuditRequest(options=options).stored())
    if audits.mark_running(row.id) is False:  # the audit store is compare-and-set: another instance claimed it
        raise ServiceError(f"Audit {row.id} was claimed by another instance.", code="audit_claimed")
    try:
        with audit_input_errors():
            outcome = run_audit(AuditData(side.frame, side.roles, side.ref, digest=side.digest),
                                AuditData(frame, column_roles, {"id": dataset.id, "name": dataset.name}),
                                pack=side.pack, options=options, audit_id=row.id,
                                reference_cache=runtime.reference_cache(),
                                progress=lambda p, stage: audits.set_progress(row.id, p, stage))
        atomic_write_text(audits.reports_dir / f"{row.id}.html", outcome.html)
        atomic_write_text(audits.reports_dir / f"{row.id}.md", outcome.markdown)
        for fmt, text in (outcome.exports or {}).items():
            atomic_write_text(audits.reports_dir / f"{row.id}.next-round.{fmt}", text)
        result = outcome.result_json
        audits.mark_succeeded(row.id, result, f"{row.id}.html")
    except BaseException as exc:
        error = run_error(exc)  # the code and message, as the audit worker stores them (no traceback)
        audits.mark_failed(row.id, error if isinstance(exc, ServiceError) else {**error, "code": "audit_error"})
        raise
    return row.id, result


def execute(runtime: Any, store: MonitorStore, cache: BenchmarkCache, run_id: str, *,
            outbox: Outbox | None = None) -> str:
    """Run a claimed run to its end; returns the final status (errors are stored, not raised)."""
    try:
        run_store = ServiceRunStore(runtime, store, cache, run_id, outbox)
    except ServiceError as exc:  # the monitor was deleted between the claim and now
        store.finish_run(run_id, "failed", error=run_error(exc))
        return "failed"
    return execute_run(run_store, run_id)


def _messages(store: MonitorStore, monitor: MonitorRow, record: RunRecord, run: dict[str, Any]) -> list[Any]:
    """The webhook messages announcing the run's opened and resolved alerts (saved with them: none is
    lost if the receiver is down)."""
    update = record.update
    url = (monitor.alerts or {}).get("webhook")
    if not url or not (update.opened or update.resolved):
        return []
    run_info = {"id": record.run_id, "audit_id": run["audit_id"], "n_rows": run["n_rows"], "verdict": run["verdict"],
                "started_at": store.get_run(record.run_id).started_at, "report": f"/v1/monitors/{monitor.id}/report"}
    info = {"id": monitor.id, "name": monitor.name, "benchmark": monitor.benchmark_id, "domain": monitor.domain}
    at = now()
    return [message(monitor.id, record.run_id, event, [a.id for a in rows],
                    json.loads(json.dumps(payload(info, run_info, rows, event), default=str)), at)
            for event, rows in (("opened", update.opened), ("resolved", update.resolved)) if rows]
