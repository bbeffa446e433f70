"""``contextshift monitor run``: one monitoring run from cron or any external scheduler.

* ``monitor run ID`` runs a monitor defined through the API, on the configured database
  (``CONTEXTSHIFT_DATABASE_URL``), exactly as a scheduled run would (same lease and claim steps,
  so cron and the in-service scheduler can never execute the same run).
* ``monitor run --config monitor.yaml`` needs no server nor database: the YAML names the
  benchmark file, the source, the options and a JSON state file that remembers what was taken,
  the budget spent and the open alerts between runs.

Exit codes as ``contextshift audit``: 0 the run happened (or there was no new data), 1 with
``--fail-on-shift`` when alerts are open after the run, 2 on bad input or a failed run. A monitor
with a directory source run by ID from a shell without ``CONTEXTSHIFT_MONITOR_ROOTS`` exits 2 with
one line naming the setting, and stores no run (the monitor and its folder are not at fault).
"""
from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from service.errors import InvalidRequest, audit_input_errors
from service.monitors.batch import Batch
from service.monitors.run_path import BenchmarkSide, MonitorView, RunRecord, check_engine, checks_summary, execute_run
from service.monitors.sources import SOURCE_KINDS, SourceLimits, source_for
from service.settings import Settings

if TYPE_CHECKING:  # annotations only: the typed result's models (~0.08 s) load once a run has new rows
    from reports.result import AuditResult

EXIT_OK, EXIT_SHIFT, EXIT_BAD_INPUT = 0, 1, 2
ALERT_FIELDS = ("id", "monitor_id", "key", "kind", "severity", "statement", "state", "opened_run_id",
                "last_seen_run_id", "missed_runs", "created_at", "last_seen", "resolved_at")
ACTIVE = ("open", "acknowledged")  # service.monitors.alerting.ACTIVE, without its imports (tests pin them equal)


def run_by_id(monitor_id: str, *, start_runtime: Callable[[], Any], fail_on_shift: bool = False) -> tuple[int, str]:
    """One run of a stored monitor on the service's database. ``start_runtime`` gives the service's
    runtime (passed in: the runtime wires every resource together, so no resource imports it)."""
    # lazy: the database-backed service (SQLAlchemy, pandas, ~1 s) that `monitor run --config` never needs
    from service.monitors.runner import monitor_source
    from service.monitors.service import MonitorService

    runtime = start_runtime()
    service = MonitorService(runtime)
    try:
        monitor = service.store.get(monitor_id)
        # before a run is stored: a source this process cannot read is this shell's setting's fault
        monitor_source(monitor, runtime.settings).ready()
        run = service.store.create_run(monitor_id, "cli")
        service.drain(monitor_id)
        run = service.store.get_run(run.id)
        if run.status == "queued":
            return EXIT_BAD_INPUT, f"run {run.id} is queued: another process holds monitor {monitor_id} right now"
        open_alerts = service.store.alerts(monitor_id=monitor_id, state="open")
    finally:
        service.close()
        runtime.close()
    return _exit(run.status, run.verdict, run.error, [a.key for a in open_alerts], fail_on_shift, run.id,
                 run.audit_id)


def _exit(status: str, verdict: dict | None, error: dict | None, open_keys: list[str], fail_on_shift: bool,
          run_id: str, where: str | None) -> tuple[int, str]:
    n_open = len(open_keys)
    # the keys beside the count: this run's audit can read "no change" while an alert the detectors
    # opened on earlier runs' evidence (a drop still going on) stays open
    opened = f"{n_open} open alert(s)" + (f": {', '.join(sorted(open_keys)[:5])}" if open_keys else "") + (
        f" and {n_open - 5} more" if n_open > 5 else "")
    if status == "failed":
        return EXIT_BAD_INPUT, f"run {run_id} failed: [{(error or {}).get('code')}] {(error or {}).get('message')}"
    if status == "no_new_data":  # nothing new to test, but what is open stays open: the exit code says so
        code = EXIT_SHIFT if fail_on_shift and n_open else EXIT_OK
        return code, f"run {run_id}: no new data; {opened}"
    text = (f"run {run_id}: this run's audit: {str((verdict or {}).get('severity', 'none')).upper()}: "
            f"{(verdict or {}).get('summary')}\n{opened}" + (f"; audit {where}" if where else ""))
    return (EXIT_SHIFT if fail_on_shift and n_open else EXIT_OK), text


def read_config(path: str) -> dict[str, Any]:
    try:
        config = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidRequest(f"Monitor config {path!r} is not readable YAML: {exc}", code="invalid_config") from None
    if not isinstance(config, dict):
        raise InvalidRequest(f"Monitor config {path!r} must be a mapping.", code="invalid_config")
    base = Path(path).resolve().parent
    for key in ("benchmark", "benchmark_schema", "state", "out", "reference_cache"):
        if config.get(key):
            config[key] = str((base / config[key]).resolve())
    source = config.get("source") or {}
    if source.get("type") == "directory" and source.get("path"):
        source["path"] = str((base / source["path"]).resolve())
    check_engine(config.get("options") or {})
    missing = [k for k in ("benchmark", "source", "state") if not config.get(k)]
    if missing or source.get("type") not in SOURCE_KINDS:
        raise InvalidRequest(f"Monitor config {path!r} needs benchmark, source (type directory or sql) and state; "
                             f"missing: {missing or ['source.type']}.", code="invalid_config")
    return config


def _load_state(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"taken": [], "watermark": None, "n_tested": 0, "detector_state": {}, "alerts": [], "runs": []}
    return json.loads(path.read_text(encoding="utf-8"))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _save_state(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_text(json.dumps(state, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, path)  # a crash leaves the old state whole


def _alert_row(data: dict[str, Any]) -> Any:
    from service.monitors.models import AlertRow  # lazy: SQLAlchemy (~0.2 s); a run with nothing new must not load it

    values = {k: data.get(k) for k in ALERT_FIELDS}
    for k in ("created_at", "last_seen", "resolved_at"):
        value = values[k]
        if isinstance(value, str):
            values[k] = datetime.fromisoformat(value)
    return AlertRow(**values)


class StateFileStore:
    """A run's state in the monitor's JSON state file: what was taken, the budget spent, the alerts."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config, self.path = config, Path(config["state"])
        self.state = _load_state(self.path)
        options = config.get("options") or {}
        # a state file from before the e-detectors has "harm_state": decide restarts it
        detector_state = self.state.get("detector_state") or self.state.get("harm_state") or {}
        self.monitor = MonitorView(id=str(config.get("name") or "monitor"), name=str(config.get("name") or "monitor"),
                                   alpha=float(options.get("alpha", 0.05)), options=dict(options),
                                   alerts=dict(config.get("alerts") or {}), n_tested=int(self.state["n_tested"]),
                                   detector_state=detector_state)
        self.batch: Batch | None = None
        self.error: dict[str, Any] | None = None
        self.notes: list[str] = []
        self.taken = {tuple(t) for t in self.state["taken"]}

    def take(self) -> Batch:
        # the folder of a monitor.yaml is trusted (no roots), a SQL source names its own url; the limits
        # are this shell's environment now (a cron line may set them)
        source = source_for(self.config["source"], limits=SourceLimits.of(Settings()))
        self.batch = source.take(self.taken, self.state.get("watermark"))
        return self.batch

    def _taken(self) -> None:
        """What was taken stays taken, whatever the run's outcome (a bad file fails one run, not every later one)."""
        batch = self.batch
        if batch is not None:
            self.state.update(taken=sorted(self.taken | set(batch.files)),
                              watermark=batch.watermark or self.state.get("watermark"))

    def no_new_data(self, run_id: str, batch: Batch) -> None:
        if batch.files:  # unreadable files were taken (and skipped): remember them
            self._taken()
            _save_state(self.path, self.state)

    def benchmark(self) -> BenchmarkSide:
        # lazy: reading the benchmark loads pandas and the audit pipeline (~2.5 s): only once there are new rows
        from service.monitors.local_benchmark import benchmark_side

        return benchmark_side(self.config, self.state)

    def audit(self, run_id: str, batch: Batch, roles: dict[str, str], validation: dict, side: BenchmarkSide,
              alpha_k: float) -> tuple[None, dict[str, Any]]:
        # lazy, new rows only: the pipeline loads SciPy and pandas (~2 s); the schemas' models ~0.03 s
        from audit import AuditData, AuditOptions, run_audit

        options = {key: v for key, v in self.monitor.options.items() if key != "harm_tolerance"}
        with audit_input_errors():
            outcome = run_audit(
                AuditData(side.frame, side.roles, {"id": "benchmark", "name": Path(self.config["benchmark"]).name},
                          digest=side.digest),
                AuditData(batch.frame, roles, {"id": run_id, "name": batch.description or "new rows"}),
                pack=side.pack, options=AuditOptions(**{**options, "alpha": alpha_k}), audit_id=run_id,
                reference_cache=_reference_cache(self.config, self.path))
        result = outcome.result_json
        if self.config.get("out"):
            out = Path(self.config["out"])
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{run_id}.html").write_text(outcome.html, encoding="utf-8")
            (out / f"{run_id}.json").write_text(json.dumps(result), encoding="utf-8")
        return None, result

    def active_alerts(self) -> list[Any]:
        return [_alert_row(a) for a in self.state["alerts"] if a["state"] in ACTIVE]

    def save(self, record: RunRecord) -> None:
        from service.monitors import findings  # lazy: domains loads pandas (~0.6 s); a run with nothing new must not

        state, update = self.state, record.update
        assert record.batch.frame is not None  # only a batch with rows is audited (execute_run)
        _deliver(self.config, record.run_id, record.result, update, state)
        kept = {a.id: a for a in self.active_alerts()}
        kept.update({a.id: a for a in update.changed})
        history = [a for a in state["alerts"] if a["state"] not in ACTIVE and a["id"] not in kept]
        self._taken()
        state.pop("harm_state", None)
        state.update(n_tested=record.k, detector_state=record.decision.detector_state,
                     alerts=history + [{f: getattr(a, f) for f in ALERT_FIELDS} for a in kept.values()])
        state["runs"].append({"id": record.run_id, "status": "succeeded", "started_at": _now(),
                              "n_rows": len(record.batch.frame),
                              "alpha": record.alpha_k, "verdict": record.result.verdict.model_dump(mode="json"),
                              "summary": {**findings.trend_summary(record.result), **checks_summary(record.decision)},
                              "opened": [a.id for a in update.opened], "timings": record.timings})
        _save_state(self.path, state)
        self._trend()

    def fail(self, run_id: str, error: dict[str, Any]) -> None:
        self.error = error
        self._taken()
        self.state["runs"].append({"id": run_id, "status": "failed", "started_at": _now(), "error": error})
        _save_state(self.path, self.state)
        self._trend()

    def _trend(self) -> None:
        from service.monitors.local_trend import write_trend_page

        try:
            write_trend_page(self.config, self.state, [_alert_row(a) for a in self.state["alerts"]])
        except OSError as exc:  # the page is a view: a full disk or a read-only folder must not fail the run
            self.notes.append(f"the trend page was not written: {exc.strerror or exc}")


def run_config(path: str, *, fail_on_shift: bool = False) -> tuple[int, str]:
    """One run of the monitor a YAML file describes (no server, no database)."""
    config = read_config(path)
    store, run_id = StateFileStore(config), f"run_{uuid.uuid4().hex[:16]}"
    status = execute_run(store, run_id)
    open_keys = [a["key"] for a in store.state["alerts"] if a["state"] == "open"]
    verdict = store.state["runs"][-1].get("verdict") if status == "succeeded" else None
    code, text = _exit(status, verdict, store.error, open_keys, fail_on_shift, run_id, None)
    if status != "no_new_data":
        from service.monitors.local_trend import trend_path  # lazy: a run with nothing new never gets here

        text += "".join(f"\n{note}" for note in store.notes) or f"\ntrend page: {trend_path(config)}"
    return code, text


def _reference_cache(config: dict[str, Any], state_path: Path) -> Any:
    """The benchmark-side fits, kept between cron runs (each a new process, so on disk): in the
    YAML's ``reference_cache`` folder, by default ``cache/reference`` next to the state file (a cron
    job's working directory is arbitrary); none with ``CONTEXTSHIFT_REFERENCE_CACHE=off``."""
    if not Settings().reference_cache:
        return None
    from audit.pipeline.reference_cache import ReferenceCache  # lazy: the audit pipeline (~2 s)

    return ReferenceCache(Path(config.get("reference_cache") or state_path.parent / "cache" / "reference"))


def _deliver(config: dict[str, Any], run_id: str, result: "AuditResult", update: Any, state: dict) -> None:
    url = (config.get("alerts") or {}).get("webhook")
    if not url:
        return
    # lazy: alerting loads SQLAlchemy and pandas (~1 s), needed only when a run has alerts to send
    from service.monitors.alerting import deliver, payload

    monitor = {"id": None, "name": config.get("name") or "monitor", "benchmark": config["benchmark"]}
    run = {"id": run_id, "verdict": result.verdict.model_dump(mode="json"), "n_rows": result.production.n_rows}
    for event, rows in (("opened", update.opened), ("resolved", update.resolved)):
        if rows:
            deliver(url, payload(monitor, run, rows, event),
                    record=lambda **kw: state.setdefault("deliveries", []).append({"run_id": run_id, "event": event,
                                                                                  **kw}))
