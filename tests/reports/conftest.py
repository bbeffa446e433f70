"""Shared fixtures for the reports tests: the realistic dermatology audit (synthetic numbers),
a huge audit (5,000 features, 500 slices) and a hostile one (script payloads in every name)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

FIXTURES = Path(__file__).parent / "fixtures"
PAYLOADS = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "' onmouseover='alert(3)",
    "</style><script src=//evil.example/x.js></script>",
    "[click](javascript:alert(4)) $\\frac{x$ {{ 7*7 }}",
)


def load_example() -> dict:
    return json.loads((FIXTURES / "audit_example.json").read_text(encoding="utf-8"))


@pytest.fixture
def audit() -> dict:
    return load_example()


def make_huge_audit(n_features: int = 5000, n_slices: int = 500, seed: int = 0) -> dict:
    """The example audit blown up: many features, slices, context tests, untested contexts, classes."""
    rng = np.random.default_rng(seed)
    audit = load_example()
    p = rng.uniform(0, 1, n_features) ** 3
    effect = rng.exponential(0.05, n_features)
    audit["covariate"]["features"] = [
        {"name": f"feature_{i:05d}_" + "x" * 40, "method": "ks", "statistic": float(effect[i]), "p_value": float(p[i]),
         "p_value_adjusted": float(min(1.0, p[i] * 3)), "effect_size": float(effect[i]),
         "drifted": bool(p[i] < 0.01 and effect[i] > 0.1),
         "effect_name": "wasserstein_normed", "effect_floor": 0.1, "n_reference": 10**6, "n_current": 10**6,
         "kind": "feature", "status": "ok", "details": {"histogram": list(range(50))}}
        for i in range(n_features)]
    audit["covariate"]["missing"] = [dict(f, kind="missing_rate") for f in audit["covariate"]["features"][:1000]]
    slices = []
    for i in range(n_slices):
        value = float(rng.uniform(0.5, 0.95))
        share = float(rng.uniform(0, 0.05))
        gap_p = float(rng.uniform() ** 2)
        slices.append({"name": f"slice {i}: " + "long description " * 5, "definition": f"ctx_{i % 37} == {i}",
                       "source": "discovered" if i % 3 else "expert", "status": "ok",
                       "n_benchmark": int(rng.integers(0, 2000)),
                       "n_production": int(rng.integers(0, 2000)), "metric": "sensitivity", "benchmark_value": value,
                       "benchmark_ci": [value - 0.05, value + 0.05], "production_value": value - 0.02,
                       "production_ci": [value - 0.08, value + 0.04], "p_value": float(rng.uniform()),
                       "p_value_adjusted": float(rng.uniform()), "production_share": share,
                       "benchmark_share": float(rng.uniform(0, 0.05)), "gap_vs_overall": value - 0.86,
                       "gap_p_value_adjusted": gap_p, "gap_dataset": "production",
                       # the detector's decisions, as it would take them (reports never re-decide)
                       "underperforming": gap_p < 0.05 and 0.86 - value >= 0.05, "changed": False})
    audit["slices"] = slices
    audit["semantic"]["contexts"] = [
        {"name": f"context_{i}", "method": "chi2", "statistic": 3.0, "p_value": 0.001, "p_value_adjusted": 0.002,
         "effect_size": float(rng.uniform(0, 0.5)), "drifted": bool(i % 2), "effect_name": "cramers_v",
         "effect_floor": 0.1,
         "n_reference": 10**6, "n_current": 10**6, "kind": "context", "status": "ok",
         "details": {"benchmark_shares": {f"v{j}": 0.01 for j in range(100)},
                     "production_shares": {f"v{j}": 0.01 for j in range(100)}}}
        for i in range(500)]
    audit["semantic"]["untested_contexts"] = [
        {"name": f'context_{i} == "value_{i}"', "kind": "unseen_value", "column": f"context_{i}", "value": f"value_{i}",
         "definition": f'context_{i} == "value_{i}"', "n_benchmark": 0, "n_production": 50, "production_share": 0.0005,
         "min_slice_size": 30}
        for i in range(300)]
    audit["label"]["benchmark_prior"] = {f"class_{k}": 1 / 60 for k in range(60)}
    audit["label"]["production_prior_estimate"] = {
        f"class_{k}": {"estimate": 1 / 60, "ci_low": 0.0, "ci_high": 0.05} for k in range(60)}
    audit["parameters"]["huge_list"] = list(range(10_000))
    audit["parameters"]["huge_text"] = "y" * 100_000
    return audit


@pytest.fixture(scope="session")
def huge_audit() -> dict:
    return make_huge_audit()


def make_hostile_audit() -> dict:
    """Every user-supplied string replaced by script / attribute / markdown / template payloads: names
    (datasets, features, slices and their titles and definitions, contexts, untested contexts, classes,
    annotators, embedding regions), the audit's title, the notes; the stored limitations, verdict and
    plan are recomputed from the hostile strings, as the pipeline would store them."""
    from reports import plan_next_round, rank_limitations, verdict

    audit = load_example()
    n = len(PAYLOADS)
    audit["id"] = PAYLOADS[0]
    audit["domain"] = PAYLOADS[1]
    audit["title"] = PAYLOADS[4]
    audit["domain_title"] = PAYLOADS[2]
    audit["benchmark"]["name"] = PAYLOADS[3]
    audit["production"]["name"] = PAYLOADS[2]
    audit["created_at"] = PAYLOADS[0]
    distributions = audit["covariate"].get("distributions") or {}
    renamed = {}
    for i, f in enumerate(audit["covariate"]["features"]):
        renamed[f["name"]] = f["name"] = PAYLOADS[i % n] + f["name"]
        f["method"] = PAYLOADS[(i + 1) % n]
    audit["covariate"]["distributions"] = {renamed.get(k, PAYLOADS[0] + k): v for k, v in distributions.items()}
    slice_names = {}
    for i, s in enumerate(audit["slices"]):
        slice_names[s["name"]] = s["name"] = PAYLOADS[i % n] + s["name"]
        if s.get("title"):
            s["title"] = PAYLOADS[(i + 1) % n] + s["title"]
        s["definition"] = PAYLOADS[(i + 2) % n]
        s["source"] = PAYLOADS[(i + 3) % n]
    for i, t in enumerate(audit["semantic"]["contexts"]):
        t["name"] = slice_names.get(t["name"], PAYLOADS[i % n] + t["name"])
    for i, u in enumerate(audit["semantic"]["untested_contexts"]):
        u["column"], u["value"], u["name"] = PAYLOADS[i % n], PAYLOADS[(i + 1) % n], PAYLOADS[(i + 2) % n]
        u["definition"] = PAYLOADS[(i + 3) % n]
        u["measured_by"] = slice_names.get(u.get("measured_by"), u.get("measured_by"))  # still the same rows
    for i, region in enumerate((audit["semantic"].get("embedding") or {}).get("novel_regions") or []):
        region["top_contexts"] = [PAYLOADS[(i + j) % n] for j in range(len(region.get("top_contexts") or [1]))]
    audit["label"]["benchmark_prior"] = {PAYLOADS[0]: 0.8, PAYLOADS[4]: 0.2}
    audit["label"]["production_prior_estimate"] = {
        PAYLOADS[0]: {"estimate": 0.73, "ci_low": 0.69, "ci_high": 0.77},
        PAYLOADS[4]: {"estimate": 0.27, "ci_low": 0.23, "ci_high": 0.31}}
    audit["label"]["is_shift"] = True  # so that the class names reach a limitation statement too
    lq = audit["label_quality"]
    ids = {a["id"]: PAYLOADS[(i + 1) % n] for i, a in enumerate(lq["annotators"])}
    for a in lq["annotators"]:
        a["id"] = ids[a["id"]]
    for share in lq.get("shares") or []:
        share["annotator"] = ids.get(share["annotator"], PAYLOADS[1])
    for key in ("over_cap", "near_chance"):
        lq[key] = [ids.get(a, PAYLOADS[1]) for a in lq.get(key) or []]
    for row in lq.get("slices") or []:
        row["slice"] = slice_names.get(row["slice"], PAYLOADS[3])
    audit["parameters"][PAYLOADS[0]] = PAYLOADS[3]
    audit["notes"] = [{"part": PAYLOADS[3], "reason": PAYLOADS[4]}]
    limitations = rank_limitations(audit)
    audit["verdict"] = verdict(audit, limitations).to_dict()
    audit["limitations"] = [lim.to_dict() for lim in limitations]
    audit["next_round"] = plan_next_round(audit, limitations, budget=200, min_slice_size=30).to_dict()
    return audit


@pytest.fixture
def hostile_audit() -> dict:
    return make_hostile_audit()


@pytest.fixture
def payloads() -> tuple[str, ...]:
    return PAYLOADS


@pytest.fixture
def copy_of():
    return copy.deepcopy
