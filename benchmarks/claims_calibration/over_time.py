"""Claims over time: a monitor's false alerts over many unchanged runs, and its delay to real changes.

Every run is the real cron path, ``contextshift monitor run --config`` (``service.monitors.local.run_config``):
a directory source, a JSON state file, the monitor's budget, harm tracking, alert rules and the
row-overlap matching of findings to open alerts. The benchmark is drawn once from a real table's
scoring pool; each run drops a new batch of rows into the monitor's folder.

* **No change**: every batch is drawn from the same pool as the benchmark. The share of monitors
  that *ever* open an alert over ``runs`` runs, labelled and unlabelled, is held to alpha.
* **Changes** (SYNTHETIC, planted on real rows from run ``start`` on): ``shift`` adds 0.3 standard
  deviations to a numeric feature the model uses (outputs recomputed by the fixed model);
  ``slice_drop`` flips labels inside one expert slice (:func:`drop_slice`) so that accuracy there
  falls by 10 points. The delay is the number of changed runs until the first alert.
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from benchmarks.claims_calibration.auditing import _without_rendering
from benchmarks.claims_calibration.counting import wilson
from benchmarks.claims_calibration.tables import PreparedTable, prepare, rescore

__all__ = ["MonitorOutcome", "run_monitor", "ever_alert", "delays", "OVER_TIME_TABLES", "format_over_time"]

OVER_TIME_TABLES = ("crash", "covid_testing", "diamonds", "flchain")


@dataclass(frozen=True)
class MonitorOutcome:
    """What one simulated monitor did: the run (1-based) of its first alert, and every alert's kind."""

    table: str
    labelled: bool
    change: str  # "none" | "shift" | "slice_drop"
    start: int | None
    runs: int
    first_alert: int | None
    kinds: tuple[str, ...]


def _draw(pool: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    return pool.iloc[rng.integers(0, len(pool), n)].reset_index(drop=True)


def _shift(table: PreparedTable, frame: pd.DataFrame, sd: float) -> pd.DataFrame:
    column = table.source.used
    out = frame.copy()
    out[column] = out[column] + 0.3 * sd
    return rescore(table, out)


def drop_slice(table: PreparedTable) -> str:
    """The expert slice a 10-point drop is planted in: the one closest to a quarter of the pool
    (a slice of a few rows per batch could not show any drop within a few runs)."""
    from domains import evaluate

    shares = {s.expression: float(evaluate(s.expression, table.pool).mean()) for s in table.pack().slices}
    return min(shares, key=lambda e: abs(shares[e] - 0.25))


def _slice_drop(table: PreparedTable, frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    from domains import evaluate

    definition = drop_slice(table)
    out = frame.copy()
    inside = evaluate(definition, out).to_numpy()
    right = inside & (out["prediction"].astype(str).to_numpy() == out["label"].astype(str).to_numpy())
    accuracy = right.sum() / max(inside.sum(), 1)
    flip = right & (rng.random(len(out)) < min(1.0, 0.10 / max(accuracy, 1e-9)))
    wrong = {c: next(o for o in table.classes if o != c) for c in table.classes}
    out.loc[flip, "label"] = out.loc[flip, "label"].astype(str).map(wrong)
    return out


def run_monitor(table_name: str, *, seed: int, runs: int, labelled: bool = True, change: str = "none",
                start: int | None = None, n_benchmark: int = 2_000, batch: int = 500, alpha: float = 0.05,
                min_severity: str = "low", stop_at_first: bool = False) -> MonitorOutcome:
    """Simulate one monitor over ``runs`` cron runs and return when it first alerted."""
    from service.monitors.local import run_config

    table = prepare(table_name)
    rng = np.random.default_rng(seed)
    bench = _draw(table.pool, n_benchmark, rng)
    sd = float(table.pool[table.source.used].std())
    first, kinds = None, []
    with tempfile.TemporaryDirectory(prefix="monitor-claims-") as tmp, _without_rendering():
        folder = Path(tmp)
        (folder / "drop").mkdir()
        bench.to_parquet(folder / "benchmark.parquet", index=False)
        (folder / "pack.yaml").write_text(table.pack_path.read_text(encoding="utf-8"), encoding="utf-8")
        config = {"name": f"{table_name}-{seed}", "benchmark": "benchmark.parquet", "domain": str(folder / "pack.yaml"),
                  "source": {"type": "directory", "path": "drop", "pattern": "*.parquet"},
                  "options": {"alpha": alpha, "seed": seed}, "alerts": {"min_severity": min_severity},
                  "state": "state.json"}
        (folder / "monitor.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        for run in range(1, runs + 1):
            rows = _draw(table.pool, batch, rng)
            if change != "none" and start is not None and run >= start:
                rows = _shift(table, rows, sd) if change == "shift" else _slice_drop(table, rows, rng)
            if not labelled:
                rows = rows.drop(columns=["label"])
            rows.to_parquet(folder / "drop" / f"batch-{run:03d}.parquet", index=False)
            code, text = run_config(str(folder / "monitor.yaml"))
            if code == 2:
                raise RuntimeError(f"monitor run failed on {table_name} run {run}: {text}")
            state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
            opened = [a["kind"] for a in state["alerts"] if a.get("opened_run_id") == state["runs"][-1]["id"]]
            if opened and first is None:
                first = run
            kinds += opened
            if stop_at_first and first is not None:
                break
    return MonitorOutcome(table=table_name, labelled=labelled, change=change, start=start, runs=runs,
                          first_alert=first, kinds=tuple(kinds))


def ever_alert(*, monitors: int, runs: int, tables=OVER_TIME_TABLES, **kw) -> list[MonitorOutcome]:
    """``monitors`` no-change monitors per labelling (labelled, unlabelled), spread over ``tables``."""
    out = []
    for labelled in (True, False):
        for m in range(monitors):
            out.append(run_monitor(tables[m % len(tables)], seed=10_000 + m, runs=runs, labelled=labelled, **kw))
    return out


def delays(*, change: str, starts=(3, 10), reps: int = 3, after: int = 8, tables=OVER_TIME_TABLES,
           **kw) -> list[MonitorOutcome]:
    """Runs from the change to the first alert, for a change from each run in ``starts``."""
    out = []
    for start in starts:
        for r in range(reps):
            out.append(run_monitor(tables[r % len(tables)], seed=20_000 + 100 * start + r, runs=start + after - 1,
                                   change=change, start=start, stop_at_first=True, **kw))
    return out


def format_over_time(null: list[MonitorOutcome], changed: list[MonitorOutcome], alpha: float = 0.05) -> str:
    lines = ["Monitors over time (every run: contextshift monitor run --config; batches drawn from real tables)", "",
             "| no change | monitors | runs each | ever alerted | rate [Wilson 95 %] | verdict | kinds at first alert |",
             "|---|---|---|---|---|---|---|"]
    for labelled in (True, False):
        group = [o for o in null if o.labelled == labelled]
        if not group:
            continue
        k = sum(o.first_alert is not None for o in group)
        rate = wilson(k, len(group))
        kinds = sorted({o.kinds[0] for o in group if o.kinds})
        verdict = "FAIL" if rate.low > alpha else "ok"
        lines.append(f"| {'labelled' if labelled else 'unlabelled'} | {len(group)} | {group[0].runs} | {k} | "
                     f"{rate.rate:.3f} [{rate.low:.3f}, {rate.high:.3f}] | {verdict} | {', '.join(kinds) or '-'} |")
    lines += ["", "| change (SYNTHETIC) | from run | monitors | caught | delays (changed runs to first alert) |",
              "|---|---|---|---|---|"]
    for change in sorted({o.change for o in changed}):
        for start in sorted({o.start for o in changed if o.change == change}):
            group = [o for o in changed if o.change == change and o.start == start]
            d = [None if o.first_alert is None or o.first_alert < start else o.first_alert - start + 1 for o in group]
            early = sum(o.first_alert is not None and o.first_alert < start for o in group)
            note = f" ({early} alerted before the change)" if early else ""
            lines.append(f"| {change} | {start} | {len(group)} | {sum(x is not None for x in d)}{note} | "
                         f"{', '.join('-' if x is None else str(x) for x in d)} |")
    return "\n".join(lines)
