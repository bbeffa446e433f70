"""Monitors' change detectors on real tables: false alerts over a monitor's life, delays after a change.

One simulated monitor is a benchmark of ``n_benchmark`` rows drawn from a real table's scoring
pool (``benchmarks.claims_calibration``: a fixed model, rows it never saw) and ``runs`` batches of
``batch`` rows. Every batch is judged, side by side on the same rows, by

* **e-detectors** — the monitors' detectors as the run paths call them
  (:func:`service.monitors.drift.track_drift`, :func:`service.monitors.budget.track_harm`, the
  state carried from run to run as JSON), alerting at their shares of the ARL >= 52/alpha budget;
* **per-run levels** — what monitors did before: each numeric feature's two-sample test on its
  normal scores at ``alpha/2/52`` over the features (Bonferroni, as the audit corrects), and the
  harm test of the last 3 labelled runs against the benchmark (one-sided Newcombe bound at
  ``alpha/2/52`` over the slices, and a 5-point floor).

The audits' own change claims are not simulated (a full audit per run costs about a minute on
these tables; ``benchmarks/claims_calibration/over_time.py`` runs them through the real cron
path): their share of the budget is a fixed per-run level, unchanged in kind.

Changes are SYNTHETIC, planted on real rows from run ``start`` on: ``shift`` adds 0.3 standard
deviations to a numeric feature the model uses (outputs recomputed by the fixed model);
``slice_drop`` flips correct labels inside one expert slice so its accuracy falls by 10 points
(``benchmarks.claims_calibration.over_time``). Unlabelled monitors have no harm half here (the
label-free estimate needs the audit).

``python -m benchmarks.monitoring_detectors --out benchmarks/results/over_time_detector`` writes
``outcomes.jsonl`` (one monitor a line) and ``table.md``.
"""
from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import ndtri

from audit.roles import infer_roles
from benchmarks.claims_calibration.counting import wilson
from benchmarks.claims_calibration.over_time import OVER_TIME_TABLES, _draw, _shift, _slice_drop, drop_slice
from benchmarks.claims_calibration.tables import prepare
from detectors.rank_shift import normal_scores
from detectors.sequential import window_drop_test
from domains import evaluate
from service.monitors.budget import HORIZON, track_harm
from service.monitors.drift import drift_features, track_drift

METHODS = ("e_detectors", "per_run")


@dataclass
class Outcome:
    table: str
    seed: int
    labelled: bool
    change: str
    start: int | None
    runs: int
    first: dict = field(default_factory=dict)  # method -> run of the first alert (None: never)
    kinds: dict = field(default_factory=dict)  # method -> what alerted first
    slice_rows: float | None = None  # labelled rows a run in the dropped slice


class PerRunLevels:
    """The monitors' former rules: a fixed level per run, harm over a window of the last 3 labelled runs."""

    def __init__(self, alpha: float, n_features: int, n_slices: int, window: int = 3, floor: float = 0.05):
        self.drift_level = alpha / 2 / HORIZON / max(n_features, 1)
        self.harm_level = alpha / 2 / HORIZON / max(n_slices, 1)
        self.window, self.floor, self.runs = window, floor, {}
        self.z = float(-ndtri(self.drift_level / 2))

    def drift(self, scores: dict[str, np.ndarray], n_benchmark: dict[str, int]) -> list[str]:
        out = []
        for column, s in scores.items():
            if len(s):
                z = s.mean() / math.sqrt(1 / len(s) + 1 / n_benchmark[column])
                if abs(z) >= self.z:
                    out.append(column)
        return out

    def harm(self, counts: dict[str, tuple]) -> list[str]:
        out = []
        for name, (bv, bn, pv, pn) in counts.items():
            if pv is None or not pn or not bn:
                continue
            window = (self.runs.get(name, []) + [(round(pv * pn), pn)])[-self.window:]
            self.runs[name] = window
            test = window_drop_test(round(bv * bn), bn, sum(r[0] for r in window), sum(r[1] for r in window),
                                    level=self.harm_level, floor=self.floor)
            if test.harmful:
                out.append(name)
        return out


def _accuracy(frame: pd.DataFrame, rows: np.ndarray | None = None) -> tuple[float | None, int]:
    right = frame["prediction"].astype(str).to_numpy() == frame["label"].astype(str).to_numpy()
    right = right if rows is None else right[rows]
    return (float(right.mean()) if len(right) else None), int(len(right))


def _counts(bench: pd.DataFrame, batch: pd.DataFrame, slices: dict[str, str]) -> dict[str, tuple]:
    counts = {"overall": (*_accuracy(bench), *_accuracy(batch))}
    for name, expression in slices.items():
        rows_b, rows_p = evaluate(expression, bench).to_numpy(), evaluate(expression, batch).to_numpy()
        if rows_b.any():
            counts[name] = (*_accuracy(bench, rows_b), *_accuracy(batch, rows_p))
    return counts


def run_monitor(table_name: str, *, seed: int, runs: int, labelled: bool = True, change: str = "none",
                start: int | None = None, n_benchmark: int = 2_000, batch: int = 500, alpha: float = 0.05,
                tolerance: float = 0.05) -> Outcome:
    """One monitor's runs, both methods on the same batches; stops once both have alerted."""
    table = prepare(table_name)
    rng = np.random.default_rng(seed)
    bench = _draw(table.pool, n_benchmark, rng)
    sd = float(table.pool[table.source.used].std())
    pack = table.pack()
    roles = infer_roles(bench.columns, context_columns=[c.name for c in pack.context])
    slices = {s.name: s.expression for s in pack.slices}
    features = drift_features(bench, roles)
    old = PerRunLevels(alpha, len(features), len(slices) + 1)
    n_bench = {c: int(bench[c].notna().sum()) for c in features}
    drift_state, harm_state = {}, {}
    out = Outcome(table=table_name, seed=seed, labelled=labelled, change=change, start=start, runs=runs,
                  first={m: None for m in METHODS}, kinds={m: None for m in METHODS})
    dropped = drop_slice(table) if change == "slice_drop" else None
    slice_rows = []
    for run in range(1, runs + 1):
        rows = _draw(table.pool, batch, rng)
        if change != "none" and start is not None and run >= start:
            rows = _shift(table, rows, sd) if change == "shift" else _slice_drop(table, rows, rng)
        if dropped is not None:
            slice_rows.append(int(evaluate(dropped, rows).sum()))
        drift_state, drift = track_drift(drift_state, bench, rows, roles, alpha=alpha)
        new = [f"drift:{c.feature}" for c in drift if c.drifted]
        scores = {c: normal_scores(bench[c].to_numpy(dtype=float), rows[c].to_numpy(dtype=float)) for c in features}
        before = [f"drift:{c}" for c in old.drift(scores, n_bench)]
        if labelled:
            counts = _counts(bench, rows, slices)
            harm_state, checks = track_harm(harm_state, None, alpha=alpha, tolerance=tolerance,
                                            counts=("accuracy", counts))
            new += [c.key for c in checks if c.harmful]
            before += [f"harm:{name}" for name in old.harm(counts)]
        for method, alerts in (("e_detectors", new), ("per_run", before)):
            if alerts and out.first[method] is None:
                out.first[method], out.kinds[method] = run, sorted(alerts)[0]
        if change != "none" and all(out.first[m] is not None and out.first[m] >= start for m in METHODS):
            break
    out.slice_rows = float(np.mean(slice_rows)) if slice_rows else None
    return out


def _delay(o: Outcome, method: str) -> int | None:
    first = o.first[method]
    return None if first is None or first < o.start else first - o.start + 1


def format_table(outcomes: list[Outcome], alpha: float = 0.05) -> str:
    null = [o for o in outcomes if o.change == "none"]
    lines = ["| no change (real tables) | monitors | runs each | method | ever alerted | rate [Wilson 95 %] "
             "| target ≤ α |", "|---|---|---|---|---|---|---|"]
    for labelled in (True, False):
        group = [o for o in null if o.labelled == labelled]
        for method in METHODS if group else ():
            k = sum(o.first[method] is not None for o in group)
            r = wilson(k, len(group))
            lines.append(f"| {'labelled' if labelled else 'unlabelled'} | {len(group)} | {group[0].runs} | "
                         f"{method} | {k} | {r.rate:.3f} [{r.low:.3f}, {r.high:.3f}] | "
                         f"{'met' if r.rate <= alpha else 'NOT met'} |")
    lines += ["", "| change (SYNTHETIC) | from run | monitors | method | caught within 2 / 5 runs | "
              "within 2 [Wilson 95 %] | within 5 [Wilson 95 %] | median delay | never (in window) "
              "| before the change |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    changed = [o for o in outcomes if o.change != "none"]
    for change in sorted({o.change for o in changed}):
        for start in sorted({o.start for o in changed if o.change == change}):
            group = [o for o in changed if o.change == change and o.start == start]
            for method in METHODS:
                d = [_delay(o, method) for o in group]
                k2, k5 = sum(x is not None and x <= 2 for x in d), sum(x is not None and x <= 5 for x in d)
                r2, r5 = wilson(k2, len(group)), wilson(k5, len(group))
                caught = sorted(x for x in d if x is not None)
                median = f"{caught[len(caught) // 2]}" if len(caught) * 2 > len(group) else "> window"
                early = sum(o.first[method] is not None and o.first[method] < start for o in group)
                lines.append(f"| {change} | {start} | {len(group)} | {method} | {k2} / {k5} | "
                             f"{r2.rate:.2f} [{r2.low:.2f}, {r2.high:.2f}] | "
                             f"{r5.rate:.2f} [{r5.low:.2f}, {r5.high:.2f}] | "
                             f"{median} | {sum(x is None for x in d) - early} | {early} |")
    rows = [o.slice_rows for o in changed if o.slice_rows is not None]
    if rows:
        lines += ["", f"Dropped slice: {min(rows):.0f}–{max(rows):.0f} labelled rows a run "
                      f"(mean {np.mean(rows):.0f})."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--monitors", type=int, default=100, help="no-change monitors per labelling")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--reps", type=int, default=40, help="monitors per change and start")
    parser.add_argument("--starts", default="3,10,50")
    parser.add_argument("--after", type=int, default=10, help="runs watched from the change on")
    parser.add_argument("--tables", default=",".join(OVER_TIME_TABLES))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--format", action="store_true", help="only tabulate the outcomes already written")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "outcomes.jsonl"
    if not args.format:
        tables, began = args.tables.split(","), time.perf_counter()
        path.write_text("")
        jobs = [dict(table_name=tables[m % len(tables)], seed=10_000 + m, runs=args.runs, labelled=labelled)
                for labelled in (True, False) for m in range(args.monitors)]
        jobs += [dict(table_name=tables[r % len(tables)], seed=20_000 + 100 * start + r, runs=start + args.after - 1,
                      change=change, start=start)
                 for change in ("shift", "slice_drop") for start in (int(s) for s in args.starts.split(","))
                 for r in range(args.reps)]
        for job in jobs:
            outcome = run_monitor(**job)
            with path.open("a") as fh:
                fh.write(json.dumps(asdict(outcome)) + "\n")
        print(f"{len(jobs)} monitors in {time.perf_counter() - began:.0f} s")
    outcomes = [Outcome(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
    table = format_table(outcomes)
    (args.out / "table.md").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
