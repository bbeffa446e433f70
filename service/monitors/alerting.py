"""Alerts once per finding, and webhook delivery with retries to checked targets only.

An alert opens for a finding key at or above the monitor's ``min_severity`` that has no alert
open (or acknowledged) yet. While the key keeps appearing, the alert stays open with a new
``last_seen`` and nothing is sent again. After the key is absent from :data:`RESOLVE_AFTER`
consecutive tested runs, the alert is resolved and a resolution message is sent. Runs without
new data do not count as absent. Which keys are present is the run's decision
(:attr:`service.monitors.decide.RunDecision.present_keys`: a harm key stays while the drop goes on).
"""
from __future__ import annotations

import http.client
import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable
from urllib.parse import urlsplit

from service.monitors.findings import Finding
from service.monitors.models import AlertRow
from service.monitors.webhook_http import post_json
from service.monitors.webhook_targets import TargetRefused, resolve_target
from service.orm import new_id
from service.settings import get_settings

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
DELIVERED, RETRY, REFUSED = "delivered", "retry", "refused"


def failure_text(attempt: int) -> str:
    """What is stored and shown for a failed attempt: the cause goes to the server log only."""
    return f"delivery failed (attempt {attempt}); see the server log"


def deliver(url: str, body: dict[str, Any], *, record: Recorder, attempts: int = 4, backoff_s: float = 0.5,
            timeout_s: float = 10.0, sleep: Callable[[float], None] = time.sleep, allow_private: bool | None = None,
            first_attempt: int = 1) -> str:
    """POST ``body`` as JSON to a checked target; retry with back-off on errors and 5xx/429.

    Returns :data:`DELIVERED`, :data:`REFUSED` (the receiver answered 3xx or 4xx: retrying will not
    help, and a redirect is never followed) or :data:`RETRY` (try again later: the receiver is
    down, or its name resolves to an address the target rules refuse right now). Each attempt is
    recorded with a generic error text; its cause is logged.
    """
    if allow_private is None:
        allow_private = get_settings().webhook_allow_private
    data = json.dumps(body, default=str).encode("utf-8")
    for attempt in range(first_attempt, first_attempt + attempts):
        status = None
        try:
            target = resolve_target(url, allow_private=allow_private)
            status = post_json(target, data, timeout_s=timeout_s)
        except TargetRefused as exc:
            log.warning("webhook attempt %d refused: %s", attempt, exc.reason)
            record(attempt=attempt, ok=False, status_code=None, error=failure_text(attempt))
            return RETRY  # the same URL gets the same answer now; a later pass checks it again
        except (OSError, http.client.HTTPException, ValueError) as exc:
            log.warning("webhook attempt %d to %s failed: %s: %s", attempt, _host(url), type(exc).__name__, exc)
        ok = status is not None and 200 <= status < 300
        if status is not None and not ok:
            log.warning("webhook attempt %d to %s: HTTP %d", attempt, _host(url), status)
        record(attempt=attempt, ok=ok, status_code=status, error=None if ok else failure_text(attempt))
        if ok:
            return DELIVERED
        if status is not None and 300 <= status < 500 and status not in (408, 429):
            return REFUSED
        if attempt < first_attempt + attempts - 1:
            sleep(backoff_s * 2 ** (attempt - first_attempt))
    log.warning("webhook to %s: not delivered after attempt %d; it stays queued", _host(url),
                first_attempt + attempts - 1)
    return RETRY


def _host(url: str) -> str:
    try:
        return urlsplit(url).hostname or "?"
    except ValueError:
        return "?"
