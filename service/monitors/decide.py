"""What one monitor run decides from its audit: harm checks, drift checks, alert-worthy change
claims, and the keys still present. One function for both ways a run executes (the service's
runner over the database, ``contextshift monitor run --config`` over a state file), so the two
cannot drift apart; both save the returned ``detector_state`` with the run and hand it back next run.

``detector_state`` is ``{"benchmark": digest, "harm": {slice: ...}, "drift": {feature: ...}}``:
the e-detectors' evidence so far (:mod:`service.monitors.budget`). A run against a benchmark
whose content hash differs from the one the evidence was gathered on restarts every detector
(``RunDecision.reset``): evidence against the old benchmark says nothing about the new one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from reports.result import AuditResult
from service.monitors import budget, findings
from service.monitors.drift import DriftCheck, track_drift
from service.monitors.findings import SEVERITY_ORDER, Finding

__all__ = ["RunDecision", "decide_run", "DRIFT_SEVERITY"]

# low: a moved feature is a change the audit has not (yet) shown to cost accuracy; a monitor alerting at
# "medium" (the default) keeps the drift detectors' evidence and alerts on the audits' graded claims
DRIFT_SEVERITY = "low"


@dataclass(frozen=True)
class RunDecision:
    detector_state: dict
    checks: list[budget.HarmCheck] = field(default_factory=list)
    changes: list[Finding] = field(default_factory=list)  # change claims at or above the alert floor
    others: list[Finding] = field(default_factory=list)  # standing, or below the floor: present, never opened
    drift: list[DriftCheck] = field(default_factory=list)
    reset: bool = False  # the benchmark changed: every detector started over this run
    claimed_rows: frozenset[str] = frozenset()  # harm slices ("overall" or a slice name) an alerting claim states

    @property
    def harm(self) -> list[Finding]:
        return [Finding(key=c.key, kind="harm", severity="high", statement=c.statement())
                for c in self.checks if c.harmful]

    @property
    def drifted(self) -> list[Finding]:
        return [Finding(key=c.key, kind="feature_drift", severity=DRIFT_SEVERITY, statement=c.statement())
                for c in self.drift if c.drifted]

    @property
    def alerting(self) -> list[Finding]:
        # the audit's input-shift claim, when it alerts, already says the inputs moved (and what it costs):
        # the drift detectors' findings stay present (their alerts stay open) but open nothing new
        covered = any(f.kind == "covariate_shift" for f in self.changes)
        # likewise the audit's drop claim on the same rows (overall, or the slice) already says the harm
        # with its measured loss: one fact, one alert
        harm = [f for f in self.harm if f.key.split(":", 1)[1] not in self.claimed_rows]
        return self.changes + harm + ([] if covered else self.drifted)

    @property
    def present_keys(self) -> set[str]:
        # a harm alert stays open while the slice's rows since the drop still read worse by the tolerance
        # (an ongoing drop read as "resolved" three runs after its alarm, while the evidence started over)
        continuing = {c.key for c in self.checks if c.continuing}
        return {f.key for f in self.changes + self.others + self.harm + self.drifted} | continuing


def _column(roles: dict[str, str], role: str) -> str | None:
    return next((c for c, r in roles.items() if r == role), None)


def decide_run(result: AuditResult, *, benchmark: pd.DataFrame, production: pd.DataFrame,
               benchmark_roles: dict[str, str], production_roles: dict[str, str], detector_state: dict,
               open_keys: list[str], alpha: float, tolerance: float, min_severity: str,
               benchmark_digest: str | None = None) -> RunDecision:
    """The run's decisions; pure apart from reading the two frames (the caller saves the state)."""
    state = dict(detector_state or {})
    # a state from before the e-detectors (the windows of labelled counts) has no "harm" key: start over
    reset = bool(state) and ("harm" not in state or (benchmark_digest is not None and state.get("benchmark")
                                                      not in (None, benchmark_digest)))
    if reset:
        state = {}
    counts = None
    metric = result.overall.metric if result.overall else ""
    label, prediction = _column(benchmark_roles, "label"), _column(benchmark_roles, "prediction")
    if not budget.is_proportion(metric) and label and prediction:
        counts = budget.accuracy_counts(result, benchmark, production, label=label, prediction=prediction,
                                        production_label=_column(production_roles, "label"))
    harm_state, checks = budget.track_harm(state.get("harm") or {}, result, alpha=alpha, tolerance=tolerance,
                                           counts=counts)
    checks += budget.estimated_harm(result, tolerance=tolerance, alpha=alpha)
    drift_state, drift = track_drift(state.get("drift") or {}, benchmark, production, benchmark_roles, alpha=alpha)
    if SEVERITY_ORDER[DRIFT_SEVERITY] < SEVERITY_ORDER.get(min_severity, 2):
        drift = [c for c in drift if not c.drifted]  # below the monitor's alert floor: not alerted
    changes, others = findings.alertable(result, min_severity)
    matched = findings.match_open_alerts(changes + others, open_keys, production)
    new_state = {"benchmark": benchmark_digest or state.get("benchmark"), "harm": harm_state, "drift": drift_state}
    return RunDecision(detector_state=new_state, checks=checks, changes=matched[:len(changes)],
                       others=matched[len(changes):], drift=drift, reset=reset,
                       claimed_rows=_claimed_rows(result, matched[:len(changes)]))


def _claimed_rows(result: AuditResult, changes: list[Finding]) -> frozenset[str]:
    """The harm detectors' slices (``overall`` or a slice's name) that an alerting drop claim is about."""
    by_definition = {s.definition: s.name for s in result.slices if s.definition}
    out = set()
    for f in changes:
        if f.kind not in ("concept_shift", "underperforming_slice"):
            continue
        if f.key == "concept_shift:all":
            out.add("overall")
        elif f.definition and f.definition in by_definition:
            out.add(by_definition[f.definition])
    return frozenset(out)
