"""Prepared real tables: a fixed model trained once on a disjoint part, and the scoring pool.

The model is fitted on ``train_rows`` rows (seeded) and never again; the remaining rows, with the
model's ``prediction`` and ``score`` (binary: positive-class probability) or ``proba_<class>``
columns, form the *pool* that null and planted audits draw both sides from. Binary predictions use
the training positive rate as the threshold, so sensitivity and specificity are comparable even for
rare positives. Prepared tables are cached in ``benchmarks/.cache`` (git-ignored).
"""
from __future__ import annotations

import hashlib
import os
import pickle
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

# imported before any thread limit is set: threadpoolctl only limits libraries already loaded
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from threadpoolctl import threadpool_limits

from benchmarks.claims_calibration.sources import SOURCES, TableSource

__all__ = ["PreparedTable", "prepare", "prepare_all", "table_names", "rescore", "CACHE_DIR", "PACK_DIR"]

ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = ROOT / "benchmarks" / ".cache"
PACK_DIR = ROOT / "benchmarks" / "packs"
CACHE_VERSION = "1"  # bump when a loader, the model or the pool changes
SEED = 0


@dataclass(frozen=True)
class PreparedTable:
    """One real table ready to audit.

    Attributes
    ----------
    source : TableSource
    pool : DataFrame, shape (n_pool, n_columns)
        Rows the model never saw: contexts, features, ``label``, ``prediction`` and score columns.
    classes : tuple of str
    model_accuracy : float
        Accuracy of the fixed model on the pool (for the tables' stories).
    """

    source: TableSource
    pool: pd.DataFrame
    classes: tuple[str, ...]
    model_accuracy: float

    @property
    def name(self) -> str:
        return self.source.name

    @property
    def pack_path(self) -> Path:
        return PACK_DIR / f"{self.name}.yaml"

    def pack(self):
        from domains import load_pack_yaml

        return load_pack_yaml(self.pack_path.read_text(encoding="utf-8"))


def table_names() -> tuple[str, ...]:
    return tuple(s.name for s in SOURCES)


def _design(frame: pd.DataFrame, columns: tuple[str, ...]) -> tuple[np.ndarray, list[bool]]:
    """Numeric matrix for the model: categorical columns as category codes (flagged as categorical)."""
    out, categorical = [], []
    for c in columns:
        values = frame[c]
        if values.dtype == object or str(values.dtype) in ("category", "string"):
            out.append(pd.Categorical(values, categories=sorted(values.unique())).codes.astype(float))
            categorical.append(True)
        else:
            out.append(values.to_numpy(dtype=float))
            categorical.append(False)
    return np.column_stack(out), categorical


def _fit_model(x: np.ndarray, y: np.ndarray, categorical: list[bool], n_train: int):
    if n_train >= 1000:
        return HistGradientBoostingClassifier(random_state=SEED, categorical_features=categorical,
                                              max_iter=200).fit(x, y)
    # small training sets: a regularised linear model overfits less than boosting
    cat = [i for i, c in enumerate(categorical) if c]
    num = [i for i, c in enumerate(categorical) if not c]
    encode = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), cat),
                                ("num", StandardScaler(), num)])
    return make_pipeline(encode, LogisticRegression(C=1.0, max_iter=2000)).fit(x, y)


def _build(source: TableSource) -> tuple[PreparedTable, dict]:
    frame = source.load().reset_index(drop=True)
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(frame))
    train, rest = order[:source.train_rows], np.sort(order[source.train_rows:])
    x, categorical = _design(frame, source.model_columns)
    categories = {c: sorted(frame[c].unique()) for c, is_cat in zip(source.model_columns, categorical) if is_cat}
    y = frame["label"].to_numpy()
    with _one_thread():
        model = _fit_model(x[train], y[train], categorical, len(train))
        proba = model.predict_proba(x[rest])
    classes = tuple(str(c) for c in model.classes_)
    pool = frame.iloc[rest].reset_index(drop=True).copy()
    threshold = float(np.mean(y[train] == source.positive)) if len(classes) == 2 else None
    fitted = {"model": model, "threshold": threshold, "categories": categories, "classes": classes}
    _write_outputs(pool, proba, source, fitted)
    accuracy = float(np.mean(pool["prediction"].to_numpy() == pool["label"].to_numpy()))
    return PreparedTable(source=source, pool=pool, classes=classes, model_accuracy=accuracy), fitted


def _write_outputs(frame: pd.DataFrame, proba: np.ndarray, source: TableSource, fitted: dict) -> None:
    """The model's ``prediction`` and ``score`` / ``proba_<class>`` columns, written into ``frame``."""
    classes = fitted["classes"]
    if len(classes) == 2:
        positive = classes.index(source.positive)
        frame["score"] = proba[:, positive]
        frame["prediction"] = np.where(proba[:, positive] >= fitted["threshold"], source.positive,
                                       classes[1 - positive])
    else:
        for i, c in enumerate(classes):
            frame[f"proba_{c}"] = proba[:, i]
        frame["prediction"] = np.asarray(classes)[proba.argmax(axis=1)]


def rescore(table: PreparedTable, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the fixed model's outputs recomputed from its (possibly changed) columns."""
    fitted = _fitted(table.source)
    out = frame.copy()
    columns = []
    for c in table.source.model_columns:
        if c in fitted["categories"]:
            columns.append(pd.Categorical(out[c], categories=fitted["categories"][c]).codes.astype(float))
        else:
            columns.append(out[c].to_numpy(dtype=float))
    with _one_thread():
        proba = fitted["model"].predict_proba(np.column_stack(columns))
    _write_outputs(out, proba, table.source, fitted)
    return out


def _one_thread():
    """One OpenMP/BLAS thread: on a shared, loaded machine boosting's thread team spins instead of working
    (a 2,000-row fit took minutes with the default team)."""
    return threadpool_limits(limits=1)


@lru_cache(maxsize=None)
def _fitted(source: TableSource) -> dict:
    """The fixed model of ``source`` (cached beside its pool; rebuilt, identically, when missing)."""
    path = _cache_path(source).with_name(_cache_path(source).stem + "-model.pkl")
    if path.exists():
        with path.open("rb") as fh:
            return pickle.load(fh)
    _, fitted = _build(source)
    _atomic_pickle(path, fitted)
    return fitted


def _atomic_pickle(path: Path, obj) -> None:
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with tmp.open("wb") as fh:
        pickle.dump(obj, fh)
    tmp.replace(path)


def _cache_path(source: TableSource) -> Path:
    pack = (PACK_DIR / f"{source.name}.yaml").read_bytes()
    digest = hashlib.sha256(pack + repr((CACHE_VERSION, source.model_columns, source.train_rows)).encode())
    return CACHE_DIR / f"{source.name}-{digest.hexdigest()[:12]}.pkl"


@lru_cache(maxsize=None)
def prepare(name: str) -> PreparedTable:
    """The prepared table ``name`` (built once, then read from the cache)."""
    source = next((s for s in SOURCES if s.name == name), None)
    if source is None:
        raise ValueError(f"name must be one of {table_names()}, got {name!r}.")
    path = _cache_path(source)
    if path.exists():
        with path.open("rb") as fh:
            pool, classes, accuracy = pickle.load(fh)
        return PreparedTable(source=source, pool=pool, classes=classes, model_accuracy=accuracy)
    table, fitted = _build(source)
    _atomic_pickle(path, (table.pool, table.classes, table.model_accuracy))
    _atomic_pickle(path.with_name(path.stem + "-model.pkl"), fitted)
    return table


def prepare_all(names: tuple[str, ...] | None = None) -> list[PreparedTable]:
    return [prepare(n) for n in (names or table_names())]
