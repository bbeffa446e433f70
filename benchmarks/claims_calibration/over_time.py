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

import argparse
import json
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

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
    seconds: float = 0.0  # wall time of the monitor's runs (each one cron run, in process)


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
    first, kinds, began = None, [], time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="monitor-claims-") as tmp:
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
                          first_alert=first, kinds=tuple(kinds), seconds=round(time.perf_counter() - began, 2))


def ever_alert(*, monitors: int, runs: int, tables=OVER_TIME_TABLES, labellings=(True, False), first: int = 0,
               done=None, **kw) -> list[MonitorOutcome]:
    """``monitors`` no-change monitors per labelling (labelled, unlabelled), spread over ``tables``;
    ``first`` numbers the first one (parts of one table run side by side); ``done`` sees each outcome."""
    out = []
    for labelled in labellings:
        for m in range(first, first + monitors):
            out.append(run_monitor(tables[m % len(tables)], seed=10_000 + m, runs=runs, labelled=labelled, **kw))
            if done is not None:
                done(out[-1])
    return out


def delays(*, change: str, starts=(3, 10), reps: int = 3, after: int = 8, tables=OVER_TIME_TABLES, done=None,
           **kw) -> list[MonitorOutcome]:
    """Runs from the change to the first alert, for a change from each run in ``starts``."""
    out = []
    for start in starts:
        for r in range(reps):
            out.append(run_monitor(tables[r % len(tables)], seed=20_000 + 100 * start + r, runs=start + after - 1,
                                   change=change, start=start, stop_at_first=True, **kw))
            if done is not None:
                done(out[-1])
    return out


def _delay(o: MonitorOutcome) -> int | None:
    """Changed runs up to and including the first alert (None: not caught, or alerted before the change)."""
    return None if o.first_alert is None or o.first_alert < o.start else o.first_alert - o.start + 1


def format_over_time(null: list[MonitorOutcome], changed: list[MonitorOutcome], alpha: float = 0.05) -> str:
    lines = ["| no change | monitors | runs each | ever alerted | rate [Wilson 95 %] | verdict "
             "| kinds at first alert |",
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
    lines += ["", "| change (SYNTHETIC) | from run | monitors | caught within the window | caught [Wilson 95 %] | "
              "delays (changed runs to first alert) | kinds at first alert |", "|---|---|---|---|---|---|---|"]
    for change in sorted({o.change for o in changed}):
        for start in sorted({o.start for o in changed if o.change == change}):
            group = [o for o in changed if o.change == change and o.start == start]
            d = [_delay(o) for o in group]
            early = sum(o.first_alert is not None and o.first_alert < start for o in group)
            note = f" ({early} alerted before the change)" if early else ""
            caught = sum(x is not None for x in d)
            rate = wilson(caught, len(group))
            window = group[0].runs - start + 1
            kinds = sorted({o.kinds[0] for o in group if o.kinds})
            lines.append(f"| {change} | {start} | {len(group)} | {caught} of {len(group)} in {window} runs{note} | "
                         f"{rate.rate:.2f} [{rate.low:.2f}, {rate.high:.2f}] | "
                         f"{', '.join('-' if x is None else str(x) for x in d)} | {', '.join(kinds) or '-'} |")
    return "\n".join(lines)


def _load(path: Path) -> list[MonitorOutcome]:
    """The outcomes a part wrote, one JSON object a line (a part stopped early keeps what it finished)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [MonitorOutcome(**{**o, "kinds": tuple(o["kinds"])}) for o in rows]


def main(argv: list[str] | None = None) -> None:
    """One part of the full table per call (parts run side by side), or ``--format`` their outputs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("labelled", "unlabelled", "shift", "slice_drop"))
    parser.add_argument("--monitors", type=int, default=20)
    parser.add_argument("--first", type=int, default=0, help="number of the first no-change monitor of this part")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--starts", default="3,10,50")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--after", type=int, default=8)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--format", nargs="*", type=Path, help="JSON outputs of the parts to tabulate")
    args = parser.parse_args(argv)
    if args.format:
        outcomes = [o for path in args.format for o in _load(path)]
        print(format_over_time([o for o in outcomes if o.change == "none"],
                               [o for o in outcomes if o.change != "none"]))
        return
    began = time.perf_counter()

    def done(outcome: MonitorOutcome) -> None:
        with args.out.open("a") as fh:
            fh.write(json.dumps(asdict(outcome)) + "\n")

    if args.part in ("labelled", "unlabelled"):
        outcomes = ever_alert(monitors=args.monitors, runs=args.runs, labellings=(args.part == "labelled",),
                              first=args.first, done=done)
    else:
        outcomes = delays(change=args.part, starts=tuple(int(s) for s in args.starts.split(",")), reps=args.reps,
                          after=args.after, done=done)
    n_runs = sum((o.first_alert or o.runs) if o.change != "none" else o.runs for o in outcomes)
    print(f"{args.part}: {len(outcomes)} monitors, {n_runs} runs, {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
