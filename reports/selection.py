"""Choosing the production rows to label for a next round: uncertainty first, with a diversity rule.

>>> import pandas as pd
>>> cands = pd.DataFrame({"id": [1, 2, 3, 4], "uncertainty": [0.9, 0.8, 0.7, 0.1],
...                       "prediction": ["a", "a", "b", "b"], "dark skin": [True] * 4})
>>> [r.id for r in select_rows(cands, [("dark skin", 2)])]
[1, 3]
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from reports.result import LabelRequest

__all__ = ["LabelRequest", "select_rows", "DIVERSITY_RULE", "has_duplicates"]

DIVERSITY_RULE = (
    "Slices are served in plan order (untested contexts first). Within a slice the candidate rows are "
    "grouped by 'cluster' (else 'prediction', else one group); each group is sorted by uncertainty "
    "(highest first, ties by id) and the groups are visited round-robin, starting with the group that "
    "holds the most uncertain row, so every batch is uncertainty-first yet covers each cluster or "
    "predicted class. A row is labelled once: rows chosen for an earlier slice are skipped, and labels "
    "a slice cannot use go to the most uncertain remaining rows of any planned slice."
)


def _image(frame: pd.DataFrame, pos: int) -> str | None:
    if "image" not in frame.columns:
        return None
    value = frame["image"].iat[pos]
    return value if isinstance(value, str) else None


def _plain(value: Any) -> Any:
    """numpy scalars as Python scalars, so ids serialise and compare naturally."""
    return value.item() if isinstance(value, np.generic) else value


def has_duplicates(ids: pd.Series) -> bool:
    """Does ``ids`` repeat a value? Ids in strictly increasing order (row numbers, numbered names:
    most id columns) are answered by one comparison of neighbours, a tenth of hashing a million
    ids; anything else (unordered, NaN, types without an order) is hashed."""
    values = ids.to_numpy()
    if values.dtype.kind in "iufUO" and values.size > 1:
        try:
            if bool(np.all(values[1:] > values[:-1])):
                return False
        except (TypeError, ValueError):  # mixed types, pd.NA: no order to rely on
            pass
    return bool(ids.duplicated().any())


def _validate(candidates) -> pd.DataFrame:
    if not isinstance(candidates, pd.DataFrame):
        raise TypeError(f"candidates must be a pandas DataFrame, got {type(candidates).__name__}.")
    missing = [c for c in ("id", "uncertainty") if c not in candidates.columns]
    if missing:
        raise ValueError(f"candidates is missing column(s) {missing}; it needs 'id', 'uncertainty' and one "
                         "boolean column per slice.")
    if has_duplicates(candidates["id"]):
        dupes = candidates.loc[candidates["id"].duplicated(), "id"].head(5).tolist()
        raise ValueError(f"candidates has duplicate ids, e.g. {dupes}.")
    return candidates.reset_index(drop=True)


def _membership(frame: pd.DataFrame, name: str, all_rows_target: str | None) -> np.ndarray:
    if name == all_rows_target:
        return np.ones(len(frame), dtype=bool)
    if name not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    return frame[name].fillna(False).astype(bool).to_numpy()


def _top_of_each_group(positions: np.ndarray, uncertainty: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    """The rows of ``positions`` among the ``k`` most uncertain of their group, ties at the k-th value kept.

    The first ``k`` rows of a round robin take at most ``k`` turns, so no row after its group's
    k-th can be among them; each group's order and the order of the groups (by their first row)
    are decided by the rows kept. Sorting the kept rows gives what sorting all of them gives, at a
    fraction of the cost when a slice holds a million rows and the budget is a few hundred.
    """
    codes, _ = pd.factorize(groups[positions])
    keep = []
    for g in range(int(codes.max()) + 1 if codes.size else 0):
        members = positions[codes == g]
        if members.size > k:
            u = uncertainty[members]
            kth = np.partition(u, members.size - k)[members.size - k]  # the k-th largest
            members = members[u >= kth]  # ties at the k-th value stay: the id decides among them
        keep.append(members)
    return np.sort(np.concatenate(keep)) if keep else positions[:0]


def _round_robin(positions: np.ndarray, uncertainty: np.ndarray, groups: np.ndarray, ids: pd.Series,
                 k: int) -> np.ndarray:
    """First ``k`` of ``positions`` in round-robin order over groups, each group by uncertainty
    (ties by the id's text)."""
    if k <= 0 or positions.size == 0:
        return positions[:0]
    if positions.size > 4 * k:
        positions = _top_of_each_group(positions, uncertainty, groups, k)
    sub = pd.DataFrame({"pos": positions, "u": uncertainty[positions], "g": groups[positions],
                        "key": ids.iloc[positions].astype(str).to_numpy()})
    sub = sub.sort_values(["u", "key"], ascending=[False, True], kind="mergesort")
    sub["turn"] = sub.groupby("g", sort=False).cumcount()
    order = {g: i for i, g in enumerate(pd.unique(sub["g"]))}
    sub["group_order"] = sub["g"].map(order)
    sub = sub.sort_values(["turn", "group_order"], kind="mergesort")
    return sub["pos"].to_numpy()[:k]


def select_rows(candidates: pd.DataFrame, quotas: list[tuple[str, int]], *,
                all_rows_target: str | None = None) -> tuple[LabelRequest, ...]:
    """Pick rows for each ``(slice name, count)`` in ``quotas`` following :data:`DIVERSITY_RULE`.

    Parameters
    ----------
    candidates : DataFrame of shape (n_rows, n_columns)
        ``id``, ``uncertainty`` (float, higher = more uncertain), one boolean column per slice
        name, optionally ``cluster`` or ``prediction``.
    quotas : list of (str, int)
        Slices in plan order with the number of rows each should get.
    all_rows_target : str, optional
        A quota name that stands for "any production row" (no membership column needed).
    """
    frame = _validate(candidates)
    group_col = next((c for c in ("cluster", "prediction") if c in frame.columns), None)
    groups = (frame[group_col].astype(str).to_numpy() if group_col else np.zeros(len(frame), dtype=object))
    uncertainty = pd.to_numeric(frame["uncertainty"], errors="coerce").fillna(-np.inf).to_numpy()
    ids = frame["id"]  # as text only for the rows whose order it decides
    members = {name: _membership(frame, name, all_rows_target) for name, _ in quotas}
    taken = np.zeros(len(frame), dtype=bool)
    picks: list[tuple[int, str]] = []
    for name, quota in quotas:
        chosen = _round_robin(np.flatnonzero(members[name] & ~taken), uncertainty, groups, ids, quota)
        taken[chosen] = True
        picks += [(int(p), name) for p in chosen]
    shortfall = sum(q for _, q in quotas) - len(picks)
    if shortfall > 0 and members:
        in_any = np.logical_or.reduce(list(members.values())) & ~taken
        pool = np.flatnonzero(in_any)
        pool = pool[np.lexsort((ids.iloc[pool].astype(str).to_numpy(), -uncertainty[pool]))][:shortfall]
        for p in pool:
            picks.append((int(p), next(name for name, _ in quotas if members[name][p])))
    names = [name for name, _ in quotas]
    rows = []
    for rank, (pos, name) in enumerate(picks, start=1):
        u = float(uncertainty[pos])
        rows.append(LabelRequest(
            rank=rank, id=_plain(frame["id"].iat[pos]), slice=name, uncertainty=u if np.isfinite(u) else None,
            group=str(groups[pos]) if group_col else None,
            tags=[n for n in names if members[n][pos]],
            image=_image(frame, pos)))
    return tuple(rows)
