"""``contextshift monitor run``: one monitoring run from cron or any external scheduler.

* ``monitor run ID`` runs a monitor defined through the API, on the configured database
  (``CONTEXTSHIFT_DATABASE_URL``), exactly as a scheduled run would (same lease and claim steps,
  so cron and the in-service scheduler can never execute the same run).
* ``monitor run --config monitor.yaml`` needs no server nor database: the YAML names the
  benchmark file, the source, the options and a JSON state file that remembers what was taken,
  the budget spent and the open alerts between runs.

Exit codes as ``contextshift audit``: 0 the run happened (or there was no new data), 1 with
``--fail-on-shift`` when alerts are open after the run, 2 on bad input or a failed run.
"""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from service.errors import InvalidRequest
from service.monitors import budget, findings
from service.monitors.alerting import ACTIVE, deliver, payload, update_alerts
from service.monitors.decide import decide_run
from service.monitors.models import AlertRow
from service.monitors.sources import take_directory, take_sql

EXIT_OK, EXIT_SHIFT, EXIT_BAD_INPUT = 0, 1, 2
ALERT_FIELDS = ("id", "monitor_id", "key", "kind", "severity", "statement", "state", "opened_run_id",
                "last_seen_run_id", "missed_runs", "created_at", "last_seen", "resolved_at")


def run_by_id(monitor_id: str, *, fail_on_shift: bool = False) -> tuple[int, str]:
    from service.monitors.service import MonitorService
    from service.runtime import Runtime
    from service.settings import get_settings

    runtime = Runtime.start(get_settings())
    service = MonitorService(runtime)
    try:
        service.store.get(monitor_id)
        run = service.store.create_run(monitor_id, "cli")
        service.drain(monitor_id)
        run = service.store.get_run(run.id)
        if run.status == "queued":
            return EXIT_BAD_INPUT, f"run {run.id} is queued: another process holds monitor {monitor_id} right now"
        open_alerts = service.store.alerts(monitor_id=monitor_id, state="open")
    finally:
        service.close()
        runtime.close()
    return _exit(run.status, run.verdict, run.error, len(open_alerts), fail_on_shift, run.id, run.audit_id)


def _exit(status: str, verdict: dict | None, error: dict | None, n_open: int, fail_on_shift: bool, run_id: str,
          where: str | None) -> tuple[int, str]:
    if status == "failed":
        return EXIT_BAD_INPUT, f"run {run_id} failed: [{(error or {}).get('code')}] {(error or {}).get('message')}"
    if status == "no_new_data":  # nothing new to test, but what is open stays open: the exit code says so
        return (EXIT_SHIFT if fail_on_shift and n_open else EXIT_OK), f"run {run_id}: no new data; {n_open} open alert(s)"
    text = (f"run {run_id}: {str((verdict or {}).get('severity', 'none')).upper()}: {(verdict or {}).get('summary')}"
            f"\n{n_open} open alert(s)" + (f"; audit {where}" if where else ""))
    return (EXIT_SHIFT if fail_on_shift and n_open else EXIT_OK), text


def read_config(path: str) -> dict[str, Any]:
    import yaml

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
    missing = [k for k in ("benchmark", "source", "state") if not config.get(k)]
    if missing or source.get("type") not in ("directory", "sql"):
        raise InvalidRequest(f"Monitor config {path!r} needs benchmark, source (type directory or sql) and state; "
                             f"missing: {missing or ['source.type']}.", code="invalid_config")
    return config


def _load_state(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"taken": [], "watermark": None, "n_tested": 0, "harm_state": {}, "alerts": [], "runs": []}
    return json.loads(path.read_text(encoding="utf-8"))


def _save_state(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_text(json.dumps(state, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, path)  # a crash leaves the old state whole


def _alert_row(data: dict[str, Any]) -> AlertRow:
    values = {k: data.get(k) for k in ALERT_FIELDS}
    for k in ("created_at", "last_seen", "resolved_at"):
        if isinstance(values[k], str):
            values[k] = datetime.fromisoformat(values[k])
    return AlertRow(**values)


def run_config(path: str, *, fail_on_shift: bool = False) -> tuple[int, str]:
    """One run of the monitor a YAML file describes (no server, no database)."""
    from service.local import audit_frames, load_pack, read_dataset, read_schema
    from service.monitors.runner import BenchmarkSide, production_roles
    from service.store import new_id

    config = read_config(path)
    state_path = Path(config["state"])
    state = _load_state(state_path)
    source, run_id = config["source"], new_id("run")
    taken = {tuple(t) for t in state["taken"]}
    batch = (take_directory(source, taken, None) if source["type"] == "directory"
             else take_sql(source, source["url"], state.get("watermark")))
    if batch.empty:  # before the benchmark is read: a cron run with nothing new costs about start-up
        n_open = sum(1 for a in state["alerts"] if a["state"] == "open")
        return _exit("no_new_data", None, None, n_open, fail_on_shift, run_id, None)
    pack = load_pack(config.get("domain") or "generic")
    schema = read_schema(config.get("benchmark_schema"))
    bench, bench_roles = read_dataset(config["benchmark"], schema=schema, pack=pack)
    k = int(state["n_tested"]) + 1
    alpha = float((config.get("options") or {}).get("alpha", 0.05))
    alpha_k = budget.run_alpha(alpha, k)
    options = {key: v for key, v in (config.get("options") or {}).items() if key != "harm_tolerance"}
    side = BenchmarkSide(frame=bench, roles=bench_roles, ref={"id": "benchmark", "name": config["benchmark"]}, pack=pack)
    prod_roles = production_roles(batch.frame, side)
    outcome = audit_frames(bench, batch.frame, pack=pack, benchmark_roles=bench_roles,
                           production_roles=prod_roles, options={**options, "alpha": alpha_k},
                           names=(Path(config["benchmark"]).name, batch.description or "new rows"),
                           reference_cache=_reference_cache(config, state_path))
    result = outcome.result
    active = [_alert_row(a) for a in state["alerts"] if a["state"] in ACTIVE]
    decision = decide_run(result, benchmark=bench, production=batch.frame, benchmark_roles=bench_roles,
                          production_roles=prod_roles, harm_state=state.get("harm_state") or {},
                          open_keys=[a.key for a in active], alpha=alpha,
                          tolerance=float((config.get("options") or {}).get("harm_tolerance", 0.05)),
                          min_severity=(config.get("alerts") or {}).get("min_severity", "medium"))
    update = update_alerts(active, decision.alerting, decision.present_keys,
                           monitor_id=str(config.get("name") or "monitor"), run_id=run_id,
                           at=datetime.now(timezone.utc))
    _deliver(config, run_id, result, update, state)
    if config.get("out"):
        out = Path(config["out"])
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{run_id}.html").write_text(outcome.html, encoding="utf-8")
        (out / f"{run_id}.json").write_text(json.dumps(result), encoding="utf-8")
    kept = {a.id: a for a in active}
    kept.update({a.id: a for a in update.changed})
    history = [a for a in state["alerts"] if a["state"] not in ACTIVE and a["id"] not in kept]
    state.update(taken=sorted(taken | set(batch.files)), watermark=batch.watermark or state.get("watermark"),
                 n_tested=k, harm_state=decision.harm_state,
                 alerts=history + [{f: getattr(a, f) for f in ALERT_FIELDS} for a in kept.values()])
    state["runs"].append({"id": run_id, "n_rows": len(batch.frame), "alpha": alpha_k, "verdict": result["verdict"],
                          "summary": findings.trend_summary(result), "opened": [a.id for a in update.opened]})
    _save_state(state_path, state)
    n_open = sum(1 for a in state["alerts"] if a["state"] == "open")
    return _exit("succeeded", result["verdict"], None, n_open, fail_on_shift, run_id, None)


def _reference_cache(config: dict[str, Any], state_path: Path) -> Any:
    """The benchmark-side fits, kept between cron runs (each a new process, so on disk): in the
    YAML's ``reference_cache`` folder, by default ``cache/reference`` next to the state file (a cron
    job's working directory is arbitrary); none with ``CONTEXTSHIFT_REFERENCE_CACHE=off``."""
    from service.settings import Settings

    if not Settings().reference_cache:
        return None
    from service.pipeline.reference_cache import ReferenceCache

    return ReferenceCache(Path(config.get("reference_cache") or state_path.parent / "cache" / "reference"))


def _deliver(config: dict[str, Any], run_id: str, result: dict[str, Any], update: Any, state: dict) -> None:
    url = (config.get("alerts") or {}).get("webhook")
    if not url:
        return
    monitor = {"id": None, "name": config.get("name") or "monitor", "benchmark": config["benchmark"]}
    run = {"id": run_id, "verdict": result["verdict"], "n_rows": result["production"]["n_rows"]}
    for event, rows in (("opened", update.opened), ("resolved", update.resolved)):
        if rows:
            deliver(url, payload(monitor, run, rows, event),
                    record=lambda **kw: state.setdefault("deliveries", []).append({"run_id": run_id, "event": event,
                                                                                  **kw}))
