"""The limitation ranking and the verdict.

``rank_limitations`` reads an AuditResult dict (see ``reports/SCHEMA.md``) and returns ranked,
evidenced :class:`LimitationRecord` records. It never computes a test: a finding becomes a limitation
only when the detectors flagged it (``drifted``, ``underperforming``, ``changed``, ``is_shift``:
reports never re-decide), except untested contexts (unevaluable by definition) and benchmark
saturation. Severity is production prevalence × gap (see :mod:`reports.records`).

>>> audit = {"overall": {"metric": "sensitivity", "benchmark_value": 0.86, "benchmark_ci": [0.84, 0.88], "n": 1400},
...          "slices": [{"name": "Fitzpatrick V–VI", "benchmark_value": 0.61, "benchmark_ci": [0.52, 0.70],
...                      "n_benchmark": 212, "gap_p_value_adjusted": 0.0004, "production_share": 0.18,
...                      "benchmark_share": 0.03, "underperforming": True}]}
>>> [(l.rank, l.kind, l.severity) for l in rank_limitations(audit)]
[(1, 'underperforming_slice', 'high'), (2, 'benchmark_saturation', 'low')]
>>> v = verdict(audit, rank_limitations(audit))
>>> v.severity, v.standing_severity  # weak on the benchmark as well: not a change
('none', 'high')
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Any

from reports.findings_data import data_findings
from reports.findings_inputs import covariate_findings
from reports.findings_labels import label_findings
from reports.formatting import fmt_num, metric_label
from reports.grouping import Relation, fold
from reports.records import SEVERITY_ORDER, RankingContext, SeverityPriors, claim_of, rank_order
from reports.result import AuditEvidence, LimitationRecord, Verdict, as_evidence

__all__ = ["SeverityPriors", "rank_limitations", "candidate_findings", "verdict", "fails_gate",
           "GATE_LEVELS", "claims", "undecided", "sample_size", "decided", "undecided_notes"]

GATE_LEVELS = ("shift", "low", "medium", "high")



def rank_limitations(audit: AuditEvidence | Mapping, *, saturation_threshold: float | None = None,
                     alpha: float | None = None, priors: SeverityPriors | None = None) -> list[LimitationRecord]:
    """Rank the audit's supported findings by severity score, highest first.

    Parameters
    ----------
    audit : AuditEvidence, AuditResult or its JSON
        The audit (fields in ``reports/SCHEMA.md``); JSON is validated first.
    saturation_threshold : float, optional
        Primary-metric value at or above which the benchmark counts as saturated; default
        ``audit.parameters.saturation_threshold``, else 0.8.
    alpha : float, optional
        Significance level for adjusted p-values; default ``audit.parameters.alpha``.
    priors : SeverityPriors, optional
        Gaps assumed where none can be measured.

    Returns
    -------
    list of LimitationRecord
        Ranks 1..n; ties in score are broken by kind (the order of ``KINDS``) and then by slice name.
    """
    found = _locate_overall_drop(candidate_findings(audit, saturation_threshold=saturation_threshold, alpha=alpha,
                                                    priors=priors))
    found.sort(key=rank_order)
    return [lim.replaced(rank=i) for i, lim in enumerate(found, start=1)]


def candidate_findings(audit: AuditEvidence | Mapping, *, saturation_threshold: float | None = None,
                       alpha: float | None = None, priors: SeverityPriors | None = None) -> list[LimitationRecord]:
    """Every finding a test or interval decides, ranked, before any is folded into another: what the claim
    layer (``audit.claims``) groups and explains away with the rows at hand."""
    audit = as_evidence(audit)
    ctx = RankingContext.from_audit(audit, saturation_threshold=saturation_threshold, alpha=alpha, priors=priors)
    found = sorted((lim for lim in _findings(audit, ctx) if decided(lim)), key=rank_order)
    return [lim.replaced(rank=i) for i, lim in enumerate(found, start=1)]


def _findings(audit: AuditEvidence, ctx: RankingContext) -> list[LimitationRecord]:
    """Every finding the sections support: rows (slices, contexts, mix), inputs, labels."""
    return data_findings(audit, ctx) + covariate_findings(audit, ctx) + label_findings(audit, ctx)


def decided(lim: LimitationRecord) -> bool:
    """A claim needs a test or an interval behind it; a finding with neither is a note, not a limitation."""
    d = lim.decision
    return d is not None and bool(d.rule) and (bool(d.test) or d.interval is not None)


def undecided_notes(audit: AuditEvidence | Mapping, *, saturation_threshold: float | None = None,
                    alpha: float | None = None) -> list[dict[str, str]]:
    """Audit notes for the findings that :func:`rank_limitations` left out for want of a test or interval."""
    audit = as_evidence(audit)
    ctx = RankingContext.from_audit(audit, saturation_threshold=saturation_threshold, alpha=alpha, priors=None)
    return [{"part": f"{lim.kind.replace('_', ' ')}: {lim.title}"[:200],
             "reason": "stated as a note, not a limitation: no test or interval decides it. " + lim.statement}
            for lim in _findings(audit, ctx) if not decided(lim)]


def _locate_overall_drop(found: list[LimitationRecord]) -> list[LimitationRecord]:
    """An overall drop that the within-context test does not confirm lies in some population: when a
    population measured credibly below the benchmark exists (an untested context, a weak or dropped
    slice), the drop is folded into the largest one, which states the measured loss; otherwise it stays
    a concept shift of its own."""
    drop = next((lim for lim in found if lim.kind == "concept_shift" and lim.slice is None
                 and lim.evidence.get("located")), None)
    if drop is None:
        return found
    located = [lim for lim in found if lim.kind in ("untested_context", "underperforming_slice", "concept_shift")
               and lim is not drop and (lim.evidence.get("credibly_worse") or lim.kind != "untested_context")]
    if not located:
        return found
    share = lambda lim: lim.evidence.get("production_share") or 0.0  # noqa: E731
    parent = max(located, key=lambda lim: (share(lim), lim.score))
    relation = Relation(drop.key, parent.key, "explains",
                        note=f"{parent.title} is {share(parent):.0%} of production and measured below the benchmark")
    folded = fold(found, [relation])
    if parent.claim != "change":
        folded = [lim.replaced(claim="change") if lim.key == parent.key else lim for lim in folded]
    return folded


def claims(limitations: Sequence[LimitationRecord]) -> tuple[list, list]:
    """``(change claims, standing limitations)``, each in rank order."""
    ordered = sorted(limitations, key=lambda lim: lim.rank)
    return ([lim for lim in ordered if claim_of(lim) == "change"],
            [lim for lim in ordered if claim_of(lim) == "standing"])


def verdict(audit: AuditEvidence | Mapping, limitations: Sequence[LimitationRecord]) -> Verdict:
    """The one-sentence answer a newcomer reads first, as the :class:`~reports.result.Verdict` the result
    stores: ``shift_detected``, ``severity``, ``summary``, ``status``, ``reasons``, ``sample_size``,
    ``changes``, ``standing``.

    ``shift_detected`` is true when any test of the audit was flagged (any section's ``is_shift``, the
    overall metric's change, a slice's change) or any change claim exists. ``status`` is ``"shift"`` then;
    otherwise ``"inconclusive"`` when the tests that matter could not run (:func:`undecided`), else
    ``"no_shift"``. The summary leads with what changed; standing limitations are listed after it.
    ``severity`` is the highest severity among the change claims ("none" without one);
    ``standing_severity`` the highest among the standing limitations.
    """
    audit = as_evidence(audit)
    changes, standing = claims(limitations)
    shift = any(section.is_shift for section in (audit.covariate, audit.label, audit.semantic)) \
        or (audit.overall is not None and audit.overall.changed is True) \
        or any(s.changed is True for s in audit.slices) or bool(changes)
    reasons = [] if shift else undecided(audit)
    status = "shift" if shift else ("inconclusive" if reasons else "no_shift")
    worst = lambda found: max((lim.severity for lim in found), key=lambda s: SEVERITY_ORDER.get(s, 0)) \
        if found else "none"  # noqa: E731
    # Severity describes what changed: a weakness the benchmark shows as well is the model card's
    # (``standing_severity``), so an audit where nothing changed never reads as a problem found.
    severity, standing_severity = worst(changes), worst(standing)
    out: dict[str, Any] = {"shift_detected": shift, "severity": severity, "standing_severity": standing_severity,
           "status": status, "reasons": reasons,
           "sample_size": sample_size(audit) if status == "inconclusive" else None,
           "changes": [lim.key for lim in changes if getattr(lim, "key", None)],
           "standing": [lim.key for lim in standing if getattr(lim, "key", None)]}
    standing_text = _standing_sentence(standing, outranks=bool(changes) and SEVERITY_ORDER.get(standing_severity, 0)
                                       > SEVERITY_ORDER.get(severity, 0))
    if status == "inconclusive":
        size = out["sample_size"] or {}
        out["summary"] = ("Inconclusive: the audit cannot tell whether the benchmark results hold for this production "
                          f"data: {'; '.join(reasons)}." + (f" {size['sentence']}" if size.get("sentence") else "")
                          + standing_text)
        return Verdict.model_validate(out)
    if not changes:
        if shift:
            lead = "A shift was detected, but none of it is large enough to change the benchmark's conclusions."
        else:
            lead = ("No change from the benchmark was detected: no shift, new population or drop passes the "
                    "tests" + (", and the benchmark results should hold for this production data." if not standing
                               else "."))
        out["summary"] = lead + standing_text
        return Verdict.model_validate(out)
    measured = audit.overall is not None and audit.overall.benchmark_value is not None
    what = "benchmark score" if measured else "benchmark results"
    lead = {
        "high": f"Do not rely on the {what} for this production data",
        "medium": "Use the model with care on this production data",
        "low": f"The {what} mostly {'holds' if measured else 'hold'} for this production data, with a caveat",
    }[max((lim.severity for lim in changes), key=lambda s: SEVERITY_ORDER.get(s, 0))]
    top = max(changes, key=lambda lim: (SEVERITY_ORDER.get(lim.severity, 0), -lim.rank))
    others = len(changes) - 1
    more = f", and {others} more change{'s were' if others != 1 else ' was'} found" if others else ""
    out["summary"] = f"{lead}: {top.title}{more}." + standing_text
    return Verdict.model_validate(out)


def _standing_sentence(standing: Sequence[LimitationRecord], *, outranks: bool = False) -> str:
    """The standing limitations after the changes; when the worst of them is more severe than every
    change, the sentence says so, so that an assumed change does not hide a measured weakness."""
    if not standing:
        return ""
    titles = "; ".join(lim.title for lim in standing[:2]) + (f"; and {len(standing) - 2} more" if len(standing) > 2
                                                             else "")
    if outranks:
        worst = max(standing, key=lambda lim: (SEVERITY_ORDER.get(lim.severity, 0), -lim.rank))
        rest = len(standing) - 1
        return (f" More severe than any change, though not new (the benchmark shows it as well; {worst.severity} "
                f"standing limitation): {worst.title}" + (f"; and {rest} more standing" if rest else "") + ".")
    return f" Standing limitations (model card, not changes): {titles}."


def undecided(audit: AuditEvidence | Mapping) -> list[str]:
    """Why the audit cannot tell: the tests that matter did not run. Inputs or outputs must have been
    compared by at least one test that ran; with labelled production, the overall metric's change too."""
    audit = as_evidence(audit)
    tests = audit.covariate.tests()
    reasons = []
    if not any(t.ran for t in tests):
        skipped = [t for t in tests if t.status != "ok"]
        reasons.append(f"none of the {len(skipped)} input and output tests had enough data" if skipped else
                       "no test compared the model's inputs or outputs")
    if audit.production.labelled is True and (audit.overall is None or audit.overall.change_p_value is None):
        reasons.append(f"the change of {metric_label(audit.overall.metric if audit.overall else 'the metric')} could "
                       "not be tested (too few labelled rows)")
    return reasons


def sample_size(audit: AuditEvidence | Mapping, *, power: float = 0.8) -> dict | None:
    """The smallest change a two-sample test can detect at these sizes (α, ``power``), and the rows per
    side needed for the configured floor: for the primary metric as a proportion (normal approximation
    at the benchmark's value) and, for inputs, the KS distance."""
    audit = as_evidence(audit)
    n_b, n_p = audit.benchmark.n_rows, audit.production.n_rows
    if not n_b or not n_p:
        return None
    alpha = audit.parameters.alpha or 0.05
    floor = audit.parameters.effect_floors.get("performance_drop") or 0.05
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    p0 = audit.overall.benchmark_value if audit.overall else None
    p0 = 0.5 if p0 is None or not 0 < p0 < 1 else p0
    var = p0 * (1 - p0)
    mde = z * math.sqrt(var * (1 / n_b + 1 / n_p))
    needed = math.ceil(2 * var * z * z / floor ** 2)
    ks = math.sqrt(-math.log(alpha / 2) / 2) * math.sqrt((n_b + n_p) / (n_b * n_p))  # KS critical distance at α
    metric = metric_label(audit.overall.metric if audit.overall else "accuracy")
    sentence = (f"At n={int(n_b):,} benchmark and n={int(n_p):,} production rows only a change of {metric} of at "
                f"least {fmt_num(mde)} can be detected (two-sample proportion test, α = {fmt_num(alpha)}, "
                f"{power * 100:.0f} % power), and only a KS distance of at least {fmt_num(ks)} can reach "
                f"significance; the {fmt_num(floor)} floor needs about {needed:,} rows on each side.")
    return {"alpha": alpha, "power": power, "n_benchmark": int(n_b), "n_production": int(n_p), "metric": metric,
            "minimal_detectable_change": round(mde, 4), "minimal_detectable_ks": round(ks, 4), "floor": floor,
            "n_needed_per_side": needed, "sentence": sentence}


def fails_gate(result: AuditEvidence | Mapping, level: str) -> bool:
    """Should a CI job fail on this AuditResult at ``level`` (``contextshift audit --fail-on``)?

    ``"shift"``: the verdict says a shift was detected. ``"low" | "medium" | "high"``: some change claim
    at least that severe; standing limitations (a saturated benchmark, a slice weak on the benchmark as
    well, label quality) never fail a gate.

    >>> lim = {"rank": 1, "key": "underperforming_slice:x == 1", "kind": "underperforming_slice", "severity": "high",
    ...        "score": 0.05, "title": "x", "statement": "x.", "claim": "standing"}
    >>> fails_gate({"limitations": [lim]}, "low"), fails_gate({"limitations": [{**lim, "claim": "change"}]}, "high")
    (False, True)
    """
    if level not in GATE_LEVELS:
        raise ValueError(f"level must be one of {GATE_LEVELS}, got {level!r}.")
    evidence = as_evidence(result)
    if level == "shift":
        return evidence.verdict is not None and evidence.verdict.shift_detected
    floor = SEVERITY_ORDER[level]
    return any(SEVERITY_ORDER[lim.severity] >= floor for lim in evidence.limitations if claim_of(lim) == "change")
