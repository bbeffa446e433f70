"""The webhook outbox: every message is stored with the alerts it announces, then delivered.

A message stays ``pending`` until its receiver takes it (``delivered``) or refuses it with a
3xx/4xx (``failed``: retrying cannot help, and a redirect is never followed). A receiver that is
down, a timeout, a 5xx, or a name that resolves to a refused address leave it pending with a
``next_attempt_at`` that doubles from ``CONTEXTSHIFT_WEBHOOK_RETRY_S`` up to an hour. The pass
that delivers runs after each monitor run (that monitor's messages, due or not) and on each
scheduler tick (every due message). Messages of one monitor go out in the order they were
written: a message that is not delivered holds back the later ones of its monitor.
"""
from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from service.monitors.alerting import DELIVERED, REFUSED, deliver
from service.monitors.models import DeliveryRow, MonitorRow, OutboxRow
from service.monitors.store import WORKER_ID, now
from service.orm import rowcount

log = logging.getLogger("contextshift.monitors")
MAX_DELAY_S = 3600.0
FIRST_ATTEMPTS = 4  # tries (with short back-off) when a message is new; one try per later pass
CLAIM_S = 120.0


def message(monitor_id: str, run_id: str, event: str, alert_ids: list[str], body: dict[str, Any],
            at: datetime) -> OutboxRow:
    return OutboxRow(monitor_id=monitor_id, run_id=run_id, event=event, alert_ids=list(alert_ids), body=body,
                     state="pending", attempts=0, next_attempt_at=at, created_at=at)


def retry_delay(attempts: int, base_s: float) -> float:
    passes = max(0, attempts - FIRST_ATTEMPTS)
    return min(base_s * 2 ** min(passes, 20), MAX_DELAY_S)


class Outbox:
    """Deliver pending messages; safe with several instances on one database (claims are CAS)."""

    def __init__(self, sessions: sessionmaker[Session], *, allow_private: bool, retry_s: float,
                 backoff_s: float = 0.5, owner: str = WORKER_ID) -> None:
        self.sessions, self.allow_private, self.retry_s = sessions, allow_private, retry_s
        self.backoff_s, self.owner = backoff_s, owner

    def messages(self, monitor_id: str) -> list[OutboxRow]:
        with self.sessions() as s:
            return list(s.scalars(select(OutboxRow).where(OutboxRow.monitor_id == monitor_id).order_by(OutboxRow.id)))

    def pending(self, *, monitor_id: str | None = None, limit: int = 50) -> list[OutboxRow]:
        query = select(OutboxRow).where(OutboxRow.state == "pending")
        if monitor_id is not None:
            query = query.where(OutboxRow.monitor_id == monitor_id)
        with self.sessions() as s:
            return list(s.scalars(query.order_by(OutboxRow.id).limit(limit)))

    def deliver_pending(self, *, monitor_id: str | None = None, due_only: bool = True, limit: int = 50) -> int:
        """One pass; returns the number delivered. Never raises: a fault is logged, the rest go on."""
        delivered, held = 0, set()
        try:
            rows = self.pending(monitor_id=monitor_id, limit=limit)
        except Exception:
            log.exception("could not read the webhook outbox")
            return 0
        for row in rows:
            if row.monitor_id in held:
                continue
            if due_only and row.next_attempt_at is not None and _aware(row.next_attempt_at) > now():
                held.add(row.monitor_id)  # keep the monitor's messages in order
                continue
            try:
                outcome = self._send(row)
            except Exception:
                log.exception("webhook message %s: delivery pass failed", row.id)
                outcome = None
            if outcome == DELIVERED:
                delivered += 1
            else:
                held.add(row.monitor_id)
        return delivered

    def _send(self, row: OutboxRow) -> str | None:
        if not self._claim(row.id):
            return None  # another instance is sending it right now
        with self.sessions() as s:
            monitor = s.get(MonitorRow, row.monitor_id)
        url = ((monitor.alerts if monitor else None) or {}).get("webhook")
        if not url:
            self._finish(row.id, "failed", row.attempts)
            return REFUSED
        tried = []

        def record(**kw: Any) -> None:
            tried.append(kw["attempt"])
            with self.sessions.begin() as s:
                s.add(DeliveryRow(monitor_id=row.monitor_id, run_id=row.run_id, event=row.event, at=now(), **kw))

        outcome = deliver(url, row.body, record=record, attempts=FIRST_ATTEMPTS if row.attempts == 0 else 1,
                          backoff_s=self.backoff_s, allow_private=self.allow_private, first_attempt=row.attempts + 1)
        attempts = max(tried, default=row.attempts)
        if outcome in (DELIVERED, REFUSED):
            self._finish(row.id, "delivered" if outcome == DELIVERED else "failed", attempts)
        else:
            with self.sessions.begin() as s:
                s.execute(update(OutboxRow).where(OutboxRow.id == row.id).values(
                    attempts=attempts, claimed_by=None, claimed_until=None,
                    next_attempt_at=now() + timedelta(seconds=retry_delay(attempts, self.retry_s))))
        return outcome

    def _claim(self, message_id: int) -> bool:
        t = now()
        with self.sessions.begin() as s:
            done = s.execute(update(OutboxRow).where(
                OutboxRow.id == message_id, OutboxRow.state == "pending",
                or_(OutboxRow.claimed_until.is_(None), OutboxRow.claimed_until < t, OutboxRow.claimed_by == self.owner))
                .values(claimed_by=self.owner, claimed_until=t + timedelta(seconds=CLAIM_S)))
        return rowcount(done) == 1

    def _finish(self, message_id: int, state: str, attempts: int) -> None:
        with self.sessions.begin() as s:
            s.execute(update(OutboxRow).where(OutboxRow.id == message_id).values(
                state=state, attempts=attempts, finished_at=now(), next_attempt_at=None, claimed_by=None,
                claimed_until=None))


def _aware(value: datetime) -> datetime:  # SQLite hands back naive UTC
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value
