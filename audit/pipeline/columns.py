"""Which columns play which part in an audit, from the two datasets' roles and the pack."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class AuditColumns:
    """Column names by part; every list holds only columns present in both datasets."""

    features: tuple[str, ...]
    contexts: tuple[str, ...]
    label: str | None  # in the benchmark
    production_label: str | None  # when production is labelled too
    prediction: str | None
    scores: tuple[str, ...]  # "score" (binary) or proba_<class> columns
    embeddings: tuple[str, ...]
    id: str | None
    only_in_benchmark: tuple[str, ...]
    only_in_production: tuple[str, ...]
    contexts_only_in_production: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def column_view(frame: pd.DataFrame, columns) -> pd.DataFrame:
    """``frame[columns]`` without copying the columns: a new frame over the same arrays.

    ``frame[list]`` copies every selected column (a second of copying for 1 M rows x 45 columns),
    and the detectors only read their inputs; a row subset or a write would copy anyway.
    """
    return pd.DataFrame({c: frame[c] for c in columns}, index=frame.index, copy=False)


def _by_role(roles: Mapping[str, str], role: str) -> list[str]:
    return [c for c, r in roles.items() if r == role]


def resolve_columns(bench_roles: Mapping[str, str], prod_roles: Mapping[str, str]) -> AuditColumns:
    shared = [c for c in bench_roles if c in prod_roles]

    def both(role: str) -> tuple[str, ...]:
        return tuple(c for c in shared if bench_roles[c] == role and prod_roles[c] == role)

    labels = _by_role(bench_roles, "label")
    predictions = both("prediction")
    ids = both("id")
    contexts = tuple(c for c in shared if "context" in (bench_roles[c], prod_roles[c]))
    return AuditColumns(
        features=both("feature"), contexts=contexts,
        label=labels[0] if labels else None,
        production_label=labels[0] if labels and prod_roles.get(labels[0]) == "label" else None,
        prediction=predictions[0] if predictions else None,
        scores=both("score"), embeddings=both("embedding"), id=ids[0] if ids else None,
        only_in_benchmark=tuple(c for c in bench_roles if c not in prod_roles and bench_roles[c] != "ignore"),
        only_in_production=tuple(c for c in prod_roles if c not in bench_roles and prod_roles[c] != "ignore"),
        contexts_only_in_production=tuple(c for c, r in prod_roles.items()
                                          if r == "context" and c not in bench_roles),
    )


MAPPED_ROLES = ("label", "prediction")  # one column each: the same part under another name on each side


def align_named_roles(bench_roles: Mapping[str, str], prod_roles: Mapping[str, str],
                      production: pd.DataFrame) -> tuple[dict[str, str], pd.DataFrame, list[dict[str, str]]]:
    """Production's roles and frame with its label (prediction) column renamed to the benchmark's when each
    side has exactly one such column under different names: giving both the role is the user's mapping
    (``survived`` in the benchmark, ``label`` in production). Notes say what was compared with what."""
    roles, renames, notes = dict(prod_roles), {}, []
    for role in MAPPED_ROLES:
        bench = _by_role(bench_roles, role)
        prod = _by_role(prod_roles, role)
        if len(bench) != 1 or len(prod) != 1 or bench[0] == prod[0] or bench[0] in prod_roles:
            continue
        renames[prod[0]] = bench[0]
        notes.append({"part": f"column {prod[0]}", "reason": (
            f"Production's {role} column '{prod[0]}' is compared with the benchmark's '{bench[0]}': each is the only "
            f"column with the role '{role}' on its side.")})
    if not renames:
        return roles, production, notes
    roles = {renames.get(c, c): r for c, r in roles.items()}
    return roles, production.rename(columns=renames), notes


def score_matrix(frame: pd.DataFrame, scores: tuple[str, ...], classes: list[str]) -> np.ndarray | None:
    """(n, k) class-probability matrix in ``classes`` order, or None when scores are missing."""
    if not scores:
        return None
    if scores == ("score",) and len(classes) == 2:
        p = frame["score"].to_numpy(dtype=float)
        return np.column_stack([1 - p, p])
    columns = [f"proba_{c}" for c in classes]
    if all(c in frame.columns for c in columns):
        return frame[columns].to_numpy(dtype=float)
    return None


def class_list(pack: Any, *series: pd.Series) -> list[str]:
    """The pack's classes when it declares them, else the sorted values seen in the data.

    For binary packs the positive class comes last, so that column 1 of a score matrix is
    the positive-class probability.
    """
    if getattr(pack, "classes", ()):
        classes = [str(c) for c in pack.classes]
        if pack.task == "binary" and pack.positive_class is not None:
            classes = [c for c in classes if c != pack.positive_class] + [str(pack.positive_class)]
        return classes
    seen: set[str] = set()
    for s in series:
        if s is not None:
            seen.update(str(v) for v in s.dropna().unique())
    return sorted(seen)


def output_columns(ctx: Any, outputs: list[str]) -> list[str]:
    """The model-output columns a re-test compares: ``outputs`` when production has them all, else the
    prediction and score columns (the output test's names need not be columns)."""
    used = [c for c in outputs if c in ctx.production.columns]
    if len(used) != len(outputs):
        used = ([ctx.columns.prediction] if ctx.columns.prediction else []) + list(ctx.columns.scores)
    return used
