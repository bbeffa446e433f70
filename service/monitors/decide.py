"""What one monitor run decides from its audit: harm checks, alert-worthy change claims, and the
keys still present. One function for both ways a run executes (the service's runner over the
database, ``contextshift monitor run --config`` over a state file), so the two cannot drift apart.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from reports.result import AuditResult
from service.monitors import budget, findings
from service.monitors.findings import Finding

__all__ = ["RunDecision", "decide_run"]


@dataclass(frozen=True)
class RunDecision:
    harm_state: dict
    checks: list[budget.HarmCheck] = field(default_factory=list)
    changes: list[Finding] = field(default_factory=list)  # change claims at or above the alert floor
    others: list[Finding] = field(default_factory=list)  # standing, or below the floor: present, never opened

    @property
    def harm(self) -> list[Finding]:
        return [Finding(key=c.key, kind="harm", severity="high", statement=c.statement())
                for c in self.checks if c.harmful]

    @property
    def alerting(self) -> list[Finding]:
        return self.changes + self.harm

    @property
    def present_keys(self) -> set[str]:
        return {f.key for f in self.changes + self.others + self.harm}


def _column(roles: dict[str, str], role: str) -> str | None:
    return next((c for c, r in roles.items() if r == role), None)


def decide_run(result: AuditResult, *, benchmark: pd.DataFrame, production: pd.DataFrame,
               benchmark_roles: dict[str, str], production_roles: dict[str, str], harm_state: dict,
               open_keys: list[str], alpha: float, tolerance: float, min_severity: str) -> RunDecision:
    """The run's decisions; pure apart from reading the two frames (the caller saves the state)."""
    counts = None
    metric = result.overall.metric if result.overall else ""
    label, prediction = _column(benchmark_roles, "label"), _column(benchmark_roles, "prediction")
    if not budget.is_proportion(metric) and label and prediction:
        counts = budget.accuracy_counts(result, benchmark, production, label=label, prediction=prediction,
                                        production_label=_column(production_roles, "label"))
    state, checks = budget.track_harm(harm_state, result, alpha=alpha, tolerance=tolerance, counts=counts)
    checks += budget.estimated_harm(result, tolerance=tolerance, alpha=alpha)
    changes, others = findings.alertable(result, min_severity)
    matched = findings.match_open_alerts(changes + others, open_keys, production)
    return RunDecision(harm_state=state, checks=checks, changes=matched[:len(changes)], others=matched[len(changes):])
