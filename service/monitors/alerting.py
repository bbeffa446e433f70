"""Alerts once per finding, and webhook delivery with retries.

An alert opens for a finding key at or above the monitor's ``min_severity`` that has no alert
open (or acknowledged) yet. While the key keeps appearing, the alert stays open with a new
``last_seen`` and nothing is sent again. After the key is absent from :data:`RESOLVE_AFTER`
consecutive tested runs, the alert is resolved and a resolution message is sent. Runs without
new data do not count as absent.
"""
from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable

from service.monitors.findings import Finding
from service.monitors.models import AlertRow
from service.store import new_id

log = logging.getLogger("contextshift.monitors")
RESOLVE_AFTER = 3
ACTIVE = ("open", "acknowledged")


@dataclass
class AlertUpdate:
    opened: list[AlertRow] = field(default_factory=list)
    resolved: list[AlertRow] = field(default_factory=list)
    seen: list[AlertRow] = field(default_factory=list)

    @property
    def changed(self) -> list[AlertRow]:
        return self.opened + self.resolved + self.seen


def update_alerts(active: list[AlertRow], changes: list[Finding], present_keys: set[str], *, monitor_id: str,
                  run_id: str, at: datetime) -> AlertUpdate:
    """Apply one tested run's findings to the monitor's active alerts (pure: the caller saves)."""
    by_key = {a.key: a for a in active if a.state in ACTIVE}
    out = AlertUpdate()
    for finding in changes:
        if finding.key in by_key:
            continue
        row = AlertRow(id=new_id("al"), monitor_id=monitor_id, key=finding.key, kind=finding.kind,
                       severity=finding.severity, statement=finding.statement, state="open", opened_run_id=run_id,
                       last_seen_run_id=run_id, missed_runs=0, created_at=at, last_seen=at)
        by_key[finding.key] = row
        out.opened.append(row)
    opened = {a.id for a in out.opened}
    for key, row in by_key.items():
        if row.id in opened:
            continue
        if key in present_keys:
            row.last_seen, row.last_seen_run_id, row.missed_runs = at, run_id, 0
            out.seen.append(row)
            continue
        row.missed_runs = (row.missed_runs or 0) + 1
        if row.missed_runs >= RESOLVE_AFTER:
            row.state, row.resolved_at = "resolved", at
            out.resolved.append(row)
        else:
            out.seen.append(row)
    return out


def payload(monitor: dict[str, Any], run: dict[str, Any], alerts: list[AlertRow], event: str) -> dict[str, Any]:
    """The webhook body; ``text`` makes it a valid Slack incoming-webhook message as it is."""
    items = [{"id": a.id, "key": a.key, "kind": a.kind, "severity": a.severity, "statement": a.statement}
             for a in alerts]
    if event == "opened":
        lead = f"contextshift monitor '{monitor.get('name')}': {len(items)} new finding(s)"
        detail = "; ".join(f"[{a['severity']}] {a['statement']}" for a in items)
    else:
        lead = f"contextshift monitor '{monitor.get('name')}': {len(items)} finding(s) resolved"
        detail = "; ".join(f"{a['key']} (absent {RESOLVE_AFTER} runs in a row)" for a in items)
    audit = f" Audit {run.get('audit_id')}." if run.get("audit_id") else ""
    return {"event": event, "monitor": monitor, "run": run, "alerts": items,
            "text": f"{lead} in run {run.get('id')}.{audit} {detail}".strip()}


Recorder = Callable[..., None]


def deliver(url: str, body: dict[str, Any], *, record: Recorder, attempts: int = 4, backoff_s: float = 0.5,
            timeout_s: float = 10.0, sleep: Callable[[float], None] = time.sleep) -> bool:
    """POST ``body`` as JSON; retry with exponential back-off on errors and 5xx/429; record each try."""
    data = json.dumps(body, default=str).encode("utf-8")
    for attempt in range(1, attempts + 1):
        status, error = None, None
        try:
            request = urllib.request.Request(url, data=data, method="POST",
                                             headers={"Content-Type": "application/json",
                                                      "User-Agent": "contextshift-monitor"})
            with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 (http(s) checked)
                status = response.status
        except urllib.error.HTTPError as exc:
            status, error = exc.code, f"HTTP {exc.code}"
        except (urllib.error.URLError, OSError) as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
        ok = status is not None and 200 <= status < 300
        record(attempt=attempt, ok=ok, status_code=status, error=error)
        if ok:
            return True
        if status is not None and 400 <= status < 500 and status != 429:
            return False  # the receiver refuses this message: retrying will not help
        if attempt < attempts:
            sleep(backoff_s * 2 ** (attempt - 1))
    log.warning("webhook %s: gave up after %d attempts", url, attempts)
    return False
