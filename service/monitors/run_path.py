"""One monitor run, from new rows to stored alerts, whichever way it executes.

The service's runner (:mod:`service.monitors.runner`, a database) and ``contextshift monitor run
--config`` (:mod:`service.monitors.local`, a JSON state file) differ only in where a monitor's
state lives; :func:`execute_run` is the run itself, once: take the new rows, read the benchmark
side, validate the rows, audit them at the run's fixed level, decide (:func:`decide_run`), update
the alerts and hand everything to the store in one call. A failed run stores the error's code and
message (a server path in the message is masked, as the audit worker does); the traceback goes to
the log only.

Heavy modules (pandas, the audit pipeline, Great Expectations) are imported after the source said
there is something new: a cron run with nothing new costs about the interpreter's start-up.
"""
from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol

from service.errors import InvalidRequest, ServiceError
from service.monitors.batch import Batch

if TYPE_CHECKING:  # annotations only: pandas and decide (pandas) load after the source found new rows
    import pandas as pd

    from reports.result import AuditResult
    from service.monitors.decide import RunDecision

log = logging.getLogger("contextshift.monitors")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[/\\][^\s'\"/\\]+){2,}")  # the worker's rule: server paths stay on the server

__all__ = ["BenchmarkSide", "MonitorView", "RunRecord", "RunStore", "execute_run", "production_roles",
           "validate_rows", "checks_summary", "run_error", "check_engine"]


@dataclass(frozen=True)
class BenchmarkSide:
    frame: "pd.DataFrame"
    roles: dict[str, str]
    ref: dict[str, Any]
    pack: Any
    digest: str | None = None  # the benchmark's content hash, for the reference cache's keys


@dataclass(frozen=True)
class MonitorView:
    """What a run reads of its monitor, whichever store keeps it."""

    id: str
    name: str
    alpha: float
    options: dict[str, Any]
    alerts: dict[str, Any]
    n_tested: int
    detector_state: dict


@dataclass(frozen=True)
class RunRecord:
    """What a run that audited hands its store: all of it is saved together."""

    run_id: str
    k: int  # the run's number among the monitor's tested runs
    alpha_k: float
    batch: Batch
    audit_id: str | None
    result: "AuditResult"
    decision: "RunDecision"
    update: Any  # alerting.AlertUpdate: opened, resolved, changed
    timings: dict[str, float] = field(default_factory=dict)


class RunStore(Protocol):
    """Where a monitor's state lives: the service's database, or a state file."""

    monitor: MonitorView

    def take(self) -> Batch:
        """The new rows; what was taken is remembered even if the run fails later."""

    def no_new_data(self, run_id: str, batch: Batch) -> None: ...

    def benchmark(self) -> BenchmarkSide: ...

    def audit(self, run_id: str, batch: Batch, roles: dict[str, str], validation: dict, side: BenchmarkSide,
              alpha_k: float) -> tuple[str | None, dict[str, Any]]:
        """The audit of the new rows at level ``alpha_k``: its id (None: not stored) and result (its JSON)."""

    def active_alerts(self) -> list[Any]: ...

    def save(self, record: RunRecord) -> None: ...

    def fail(self, run_id: str, error: dict[str, Any]) -> None: ...


def check_engine(options: dict[str, Any]) -> None:
    """A monitor audits each batch of new rows in memory against its cached benchmark side: the Dask
    engine (datasets too large for memory) is refused when the monitor is defined, never swapped
    silently for pandas at run time."""
    if options.get("engine") == "dask":
        raise InvalidRequest("options.engine 'dask' is not available to monitors: a monitor audits each batch of new "
                             "rows in memory against its cached benchmark side (leave engine unset or 'pandas').",
                             code="engine_not_supported", details={"engine": "dask"})


def production_roles(frame: "pd.DataFrame", side: BenchmarkSide) -> dict[str, str]:
    """Columns the benchmark has keep its roles (a schema given at upload holds); others are inferred."""
    from service import roles  # lazy: pandas (~0.6 s); a cron run with nothing new must not load it

    inferred = roles.infer_roles(frame.columns, context_columns=[c.name for c in side.pack.context])
    return {c: side.roles.get(c, inferred[c]) for c in frame.columns}


def validate_rows(frame: "pd.DataFrame", column_roles: dict[str, str], pack: Any, name: str) -> dict[str, Any]:
    """The new rows checked as an upload is (:func:`service.datasets.frame_checks.check_frame`): refusals
    raise; out-of-range values are warnings in the report, their rows named in the audit's notes."""
    from service.datasets import frame_checks  # lazy: pandas (~0.6 s); a cron run with nothing new must not load it

    checked = frame_checks.check_frame(frame, pack, column_roles)
    if not checked.ok:
        raise frame_checks.refuse(name, checked.report)
    return checked.report


def checks_summary(decision: "RunDecision") -> dict[str, Any]:
    """The detectors' part of a run's stored summary (the trend page reads it): harm and drift checks,
    and whether a changed benchmark restarted the detectors."""
    return {"harm": [c.__dict__ for c in decision.checks], "drift": [c.__dict__ for c in decision.drift],
            "detectors_reset": decision.reset}


def run_error(exc: BaseException) -> dict[str, Any]:
    """A failed run's stored error: code, message and details; never a traceback."""
    if isinstance(exc, ServiceError):
        return exc.to_body()["error"]
    return {"code": "run_error", "message": _PATH.sub("<path>", f"{type(exc).__name__}: {exc}")[:500],
            "details": {"exception": type(exc).__name__}}


def execute_run(store: RunStore, run_id: str) -> str:
    """Run one run to its end; returns the final status (errors are stored, not raised)."""
    clock = [time.perf_counter()]

    def lap() -> float:
        clock.append(time.perf_counter())
        return round(clock[-1] - clock[-2], 3)

    try:
        batch = store.take()
        timings = {"take_s": lap()}
        if batch.empty:
            store.no_new_data(run_id, batch)
            return "no_new_data"
        # lazy, after the source found new rows: these load pandas, NumPy and SQLAlchemy (~1 s), which
        # a cron run with nothing new must not (tests/service/monitors/test_monitor_cli_startup.py)
        from reports.result import as_result  # its pydantic models (~0.08 s) too: only once there are new rows
        from service.monitors import budget
        from service.monitors.alerting import update_alerts
        from service.monitors.decide import decide_run

        monitor = store.monitor
        side = store.benchmark()
        timings["benchmark_s"] = lap()
        column_roles = production_roles(batch.frame, side)
        report = validate_rows(batch.frame, column_roles, side.pack, batch.description or "new rows")
        timings["validate_s"] = lap()
        k = monitor.n_tested + 1
        alpha_k = budget.run_alpha(monitor.alpha, k)
        audit_id, stored = store.audit(run_id, batch, column_roles, report, side, alpha_k)
        result = as_result(stored)  # validated once: the decision and the store read the typed result
        timings["audit_s"] = lap()
        active = store.active_alerts()
        decision = decide_run(result, benchmark=side.frame, production=batch.frame, benchmark_roles=side.roles,
                              production_roles=column_roles, detector_state=monitor.detector_state,
                              benchmark_digest=side.digest, open_keys=[a.key for a in active], alpha=monitor.alpha,
                              tolerance=float(monitor.options.get("harm_tolerance", 0.05)),
                              min_severity=(monitor.alerts or {}).get("min_severity", "medium"))
        update = update_alerts(active, decision.alerting, decision.present_keys, monitor_id=monitor.id,
                               run_id=run_id, at=datetime.now(timezone.utc))
        timings["decide_s"] = lap()
        store.save(RunRecord(run_id=run_id, k=k, alpha_k=alpha_k, batch=batch, audit_id=audit_id, result=result,
                             decision=decision, update=update, timings=timings))
        return "succeeded"
    except Exception as exc:  # the run fails; the scheduler, the service and the cron job's caller stay up
        if not isinstance(exc, ServiceError):
            log.exception("monitor run %s failed", run_id)  # the trace stays in the log
        store.fail(run_id, run_error(exc))
        return "failed"
