"""What one audit claims, and how to read a count of claims against alpha.

A limitation is a *change* claim unless the result marks it ``claim: "standing"`` (a property the
benchmark shows as well); results from before that field existed fall back to the kind
(``benchmark_saturation`` and ``label_quality`` are standing, everything else is change).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["CHANGE_KINDS", "STANDING_KINDS", "ALL_KINDS", "AuditClaims", "claims_of", "wilson", "Rate",
           "binomial_upper"]

CHANGE_KINDS = ("underperforming_slice", "untested_context", "context_mix_shift", "covariate_shift", "label_shift",
                "concept_shift")
STANDING_KINDS = ("label_quality", "benchmark_saturation")
ALL_KINDS = CHANGE_KINDS + STANDING_KINDS
SEVERITIES = {"none": 0, "low": 1, "medium": 2, "high": 3}


@dataclass(frozen=True)
class AuditClaims:
    """The claims of one audit result, flattened for counting and for reading why they fired.

    ``change`` / ``standing``: kind -> number of limitations of that kind; ``limitations``: compact
    records (rank, kind, claim, severity, key, statement, decision) of every limitation.
    """

    status: str
    shift_detected: bool
    severity: str
    sections: tuple[str, ...]  # detector sections reporting is_shift
    change: dict[str, int] = field(default_factory=dict)
    standing: dict[str, int] = field(default_factory=dict)
    limitations: tuple[dict, ...] = ()

    @property
    def any_change(self) -> bool:
        return any(self.change.values())

    @property
    def change_severity(self) -> str:
        """Highest severity among change claims ("none" without any)."""
        levels = [lim["severity"] for lim in self.limitations if lim["claim"] == "change"]
        return max(levels, key=lambda s: SEVERITIES.get(s, 0), default="none")

    def to_dict(self) -> dict:
        return {"status": self.status, "shift_detected": self.shift_detected, "severity": self.severity,
                "sections": list(self.sections), "change": self.change, "standing": self.standing,
                "limitations": list(self.limitations)}

    @classmethod
    def from_dict(cls, data: Mapping) -> "AuditClaims":
        return cls(status=data["status"], shift_detected=data["shift_detected"], severity=data["severity"],
                   sections=tuple(data["sections"]), change=dict(data["change"]), standing=dict(data["standing"]),
                   limitations=tuple(data["limitations"]))


def _claim_of(lim: Mapping) -> str:
    claim = lim.get("claim")
    if claim in ("change", "standing"):
        return claim
    return "standing" if lim.get("kind") in STANDING_KINDS else "change"


def claims_of(result: Mapping) -> AuditClaims:
    """Flatten an AuditResult (JSON) into its claims."""
    verdict = result.get("verdict") or {}
    change: dict[str, int] = {}
    standing: dict[str, int] = {}
    records = []
    for lim in result.get("limitations") or ():
        claim = _claim_of(lim)
        bucket = change if claim == "change" else standing
        bucket[lim["kind"]] = bucket.get(lim["kind"], 0) + 1
        records.append({"rank": lim.get("rank"), "kind": lim["kind"], "claim": claim, "severity": lim.get("severity"),
                        "score": lim.get("score"), "key": lim.get("key"), "statement": str(lim.get("statement"))[:2000],
                        "decision": lim.get("decision"), "related": [r.get("kind") for r in lim.get("related") or ()]})
    sections = tuple(s for s in ("covariate", "label", "semantic")
                     if isinstance(result.get(s), Mapping) and result[s].get("is_shift") is True)
    status = str(verdict.get("status") or ("shift" if verdict.get("shift_detected") else "no_shift"))
    return AuditClaims(status=status, shift_detected=bool(verdict.get("shift_detected")),
                       severity=str(verdict.get("severity", "none")), sections=sections, change=change,
                       standing=standing, limitations=tuple(records))


@dataclass(frozen=True)
class Rate:
    """``k`` of ``n`` with its Wilson 95 % interval; ``fails`` when the whole interval lies above alpha."""

    k: int
    n: int
    low: float
    high: float
    alpha: float

    @property
    def rate(self) -> float:
        return self.k / self.n if self.n else float("nan")

    @property
    def fails(self) -> bool:
        return self.n > 0 and self.low > self.alpha

    def text(self) -> str:
        if not self.n:
            return "-"
        mark = " FAIL" if self.fails else ""
        return f"{self.k}/{self.n}={self.rate:.2f} [{self.low:.2f},{self.high:.2f}]{mark}"

    def to_dict(self) -> dict:
        return {"k": self.k, "n": self.n, "rate": self.rate if self.n else None, "wilson_95": [self.low, self.high],
                "fails": self.fails}


def wilson(k: int, n: int, *, alpha: float = 0.05, z: float = 1.959964) -> Rate:
    """The Wilson score interval of ``k`` successes in ``n`` trials (``alpha`` is the target rate)."""
    if n <= 0:
        return Rate(k, n, float("nan"), float("nan"), alpha)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return Rate(k, n, max(0.0, centre - half), min(1.0, centre + half), alpha)


def binomial_upper(n: int, p: float, *, tail: float = 0.001) -> int:
    """Smallest ``k`` with P(Binomial(n, p) > k) <= ``tail``: a count above it is evidence of a rate above ``p``."""
    from scipy.stats import binom

    return int(binom.ppf(1 - tail, n, p))
