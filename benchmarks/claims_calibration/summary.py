"""False-claim rates of null audits: per table and size, pooled over tables, as text and JSON."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from benchmarks.claims_calibration.counting import CHANGE_KINDS, STANDING_KINDS, AuditClaims, Rate, wilson

__all__ = ["MEASURES", "HELD_TO_ALPHA", "rates", "summarise", "format_null", "why_lines"]

# (name, short column header, held to alpha?)
MEASURES = (
    *((k, k, True) for k in CHANGE_KINDS),
    ("any_change_claim", "any_change", True),
    ("shift_detected", "shift_det", True),
    ("inconclusive", "inconcl", False),
    ("shift_without_claim", "shift_no_claim", False),
    ("verdict_severity", "verdict_sev", False),
    ("standing_underperforming_slice", "st_weak", False),
    *((f"standing_{k}", f"st_{k[:6]}", False) for k in STANDING_KINDS),
)
HELD_TO_ALPHA = tuple(m for m, _, held in MEASURES if held)
SHORT = {"underperforming_slice": "weak_slice", "untested_context": "untested", "context_mix_shift": "mix",
         "covariate_shift": "covariate", "label_shift": "label", "concept_shift": "concept",
         "any_change_claim": "any_change", "shift_detected": "shift_det"}


def _hits(claims: AuditClaims) -> dict[str, bool]:
    hits = {k: claims.change.get(k, 0) > 0 for k in CHANGE_KINDS}
    hits["any_change_claim"] = claims.any_change
    hits["shift_detected"] = claims.shift_detected
    hits["inconclusive"] = claims.status == "inconclusive"
    hits["shift_without_claim"] = claims.shift_detected and not claims.any_change
    hits["verdict_severity"] = claims.severity != "none"  # standing limitations included
    hits["standing_underperforming_slice"] = claims.standing.get("underperforming_slice", 0) > 0
    for k in STANDING_KINDS:
        hits[f"standing_{k}"] = claims.standing.get(k, 0) > 0 or claims.change.get(k, 0) > 0
    return hits


def rates(records: Iterable[Mapping], alpha: float = 0.05) -> dict[str, Rate]:
    """Measure -> share of the (successful) audits in ``records`` where it fired."""
    audited = [AuditClaims.from_dict(r["claims"]) for r in records if "claims" in r]
    counts = defaultdict(int)
    for claims in audited:
        for name, hit in _hits(claims).items():
            counts[name] += hit
    return {name: wilson(counts[name], len(audited), alpha=alpha) for name, _, _ in MEASURES}


def summarise(records: list[Mapping], alpha: float = 0.05) -> dict:
    """JSON-ready summary: per (table, n), per (table, n, labelled) and pooled per n."""
    by_cell, by_n = defaultdict(list), defaultdict(list)
    for r in records:
        by_cell[(r["table"], r["n"])].append(r)
        by_n[r["n"]].append(r)
    cells = []
    for (table, n), group in sorted(by_cell.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        cell = {"table": table, "n": n, "audits": sum("claims" in r for r in group),
                "errors": sorted({r["error"] for r in group if "error" in r}),
                "with_replacement": any(r.get("with_replacement") for r in group),
                "seconds_median": _median([r["seconds"] for r in group]),
                "rates": {m: v.to_dict() for m, v in rates(group, alpha).items()}}
        for labelled in (True, False):
            part = [r for r in group if r["labelled"] == labelled]
            cell["labelled" if labelled else "unlabelled"] = {m: v.to_dict() for m, v in rates(part, alpha).items()}
        cells.append(cell)
    pooled = {}
    for n, group in sorted(by_n.items()):
        pooled[str(n)] = {"all": {m: v.to_dict() for m, v in rates(group, alpha).items()},
                          "labelled": {m: v.to_dict() for m, v in rates([r for r in group if r["labelled"]],
                                                                      alpha).items()},
                          "unlabelled": {m: v.to_dict() for m, v in rates([r for r in group if not r["labelled"]],
                                                                        alpha).items()}}
    codes = sorted({r.get("code", "?") for r in records})
    return {"alpha": alpha, "code": codes, "cells": cells, "pooled": pooled,
            "held_to_alpha": list(HELD_TO_ALPHA)}


def _median(values: list[float]) -> float | None:
    values = sorted(values)
    return values[len(values) // 2] if values else None


def format_null(records: list[Mapping], alpha: float = 0.05) -> str:
    """Text tables: per size, one row per table (counts, FAIL where the Wilson interval lies above
    alpha), then every measure pooled over the tables with its rate and Wilson 95 % interval."""
    lines = []
    held = [m for m in HELD_TO_ALPHA]
    extra = ["inconclusive", "shift_without_claim", "verdict_severity", "standing_underperforming_slice",
             "standing_label_quality", "standing_benchmark_saturation"]
    heads = [SHORT.get(m, m) for m in held] + ["inconcl", "shift_no_cl", "verdict_sev", "st_weak", "st_lq", "st_sat"]
    sizes = sorted({r["n"] for r in records})
    for n in sizes:
        group = [r for r in records if r["n"] == n]
        lines.append(f"n = {n:,} per side: audits with >= 1 claim of the kind (k/N; FAIL = Wilson 95 % interval "
                     f"above alpha = {alpha})")
        lines.append(f"  {'table':<14}" + "".join(f"{h:>13}" for h in heads))
        for table in sorted({r["table"] for r in group}):
            rs = rates([r for r in group if r["table"] == table], alpha)
            errors = sum("error" in r for r in group if r["table"] == table)
            row = "".join(f"{_cell(rs[m], m in held):>13}" for m in held + extra)
            lines.append(f"  {table:<14}{row}" + (f"  ({errors} errors)" if errors else ""))
        pooled = rates(group, alpha)
        lines.append("  pooled over tables:")
        for m in held + extra:
            text = pooled[m].text() if m in held else pooled[m].text().replace(" FAIL", "")
            lines.append(f"    {m:<32} {text}" + ("" if m in held else "  (not held to alpha)"))
        lines.append("")
    return "\n".join(lines)


def _cell(rate: Rate, held: bool) -> str:
    if not rate.n:
        return "-"
    return f"{rate.k}/{rate.n}" + ("!" if held and rate.fails else "")


def why_lines(records: list[Mapping], kind: str, limit: int = 5) -> list[str]:
    """The statements and decisions of ``kind`` claims in failing null audits, to read why they fired."""
    out = []
    for r in records:
        for lim in (r.get("claims") or {}).get("limitations", ()):
            if lim["kind"] == kind and lim["claim"] == "change":
                decision = lim.get("decision") or {}
                out.append(f"[{r['id']} {'L' if r['labelled'] else 'U'}] {lim['key']} | {lim['severity']} | "
                           f"{decision.get('rule', '')} | {lim['statement'][:300]}")
                break
        if len(out) >= limit:
            break
    return out
