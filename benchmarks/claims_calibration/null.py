"""Null audits: benchmark and production drawn i.i.d. from one table's scoring pool.

Nothing changed between the two sides, so every change claim is false. Each replicate draws a
fresh pair (without replacement when the pool holds both sides, else both sides with replacement
from the pool, which makes the null exact), audits it with production labelled on even replicates
and unlabelled (label dropped) on odd ones, and records what was claimed. Records are appended to
a JSON Lines log so a long run can be resumed and extended.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.claims_calibration.auditing import audit_pair, code_version, seed_for
from benchmarks.claims_calibration.counting import claims_of
from benchmarks.claims_calibration.tables import PreparedTable, prepare

__all__ = ["NullCase", "draw_null_pair", "run_case", "run_null", "read_log"]


@dataclass(frozen=True)
class NullCase:
    """One replicate: ``table`` at ``n`` rows per side, replicate number ``replicate``."""

    table: str
    n: int
    replicate: int

    @property
    def labelled(self) -> bool:
        return self.replicate % 2 == 0

    @property
    def seed(self) -> int:
        return seed_for("null", self.table, self.n, self.replicate)

    @property
    def id(self) -> str:
        return f"{self.table}/{self.n}/{self.replicate}"


def draw_null_pair(table: PreparedTable, n: int, rng: np.random.Generator, *,
                   labelled: bool = True) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """Two samples of ``n`` rows from the pool; returns ``(benchmark, production, with_replacement)``."""
    pool = table.pool
    replace = len(pool) < 2 * n
    if replace:
        rows_b, rows_p = rng.integers(0, len(pool), n), rng.integers(0, len(pool), n)
    else:
        order = rng.permutation(len(pool))
        rows_b, rows_p = order[:n], order[n:2 * n]
    benchmark = pool.iloc[rows_b].reset_index(drop=True)
    production = pool.iloc[rows_p].reset_index(drop=True)
    if not labelled:
        production = production.drop(columns=["label"])
    return benchmark, production, replace


def run_case(case: NullCase, alpha: float = 0.05) -> dict:
    """Audit one null replicate; the record says what was claimed (or the error)."""
    table = prepare(case.table)
    rng = np.random.default_rng(case.seed)
    benchmark, production, replace = draw_null_pair(table, case.n, rng, labelled=case.labelled)
    started = time.perf_counter()
    record = {"id": case.id, "table": case.table, "n": case.n, "replicate": case.replicate,
              "labelled": case.labelled, "seed": case.seed, "with_replacement": replace, "alpha": alpha,
              "code": code_version()}
    try:
        result = audit_pair(table, benchmark, production, seed=case.seed, alpha=alpha)
        record["claims"] = claims_of(result).to_dict()
    except Exception as exc:  # a crashing audit is a finding of the harness, not a reason to stop the run
        record["error"] = f"{type(exc).__name__}: {exc}"[:500]
    record["seconds"] = round(time.perf_counter() - started, 2)
    return record


def read_log(path: Path) -> list[dict]:
    """Every record of a JSON Lines log (a torn last line from a killed run is skipped)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def _cases(tables: Iterable[str], sizes: dict[int, int], done: set[str]) -> list[NullCase]:
    """Replicates still to run, interleaved by size and table so that a stopped run covers all of them."""
    cases = []
    for r in range(max(sizes.values(), default=0)):
        for n, count in sizes.items():
            if r < count:
                cases.extend(NullCase(t, n, r) for t in tables)
    return [c for c in cases if c.id not in done]


def run_null(tables: Iterable[str], sizes: dict[int, int], *, log: Path | None = None, workers: int = 1,
             alpha: float = 0.05, deadline: float | None = None, verbose: bool = True) -> list[dict]:
    """Run (or resume) the null grid and return every record for these tables and sizes.

    Parameters
    ----------
    tables : iterable of str
        Table names (see :func:`benchmarks.claims_calibration.tables.table_names`).
    sizes : dict
        Rows per side -> replicates wanted.
    log : Path, optional
        JSON Lines log; replicates already in it from the same code version are not run again.
    workers : int
        Processes auditing in parallel.
    deadline : float, optional
        ``time.time()`` after which no new replicate is started.
    """
    tables = list(tables)
    # only what this version of the code claimed counts: records of another commit are re-run
    previous = [r for r in (read_log(log) if log else []) if r.get("code") in (None, code_version())]
    done = {r["id"] for r in previous}
    todo = _cases(tables, sizes, done)
    fresh = []
    for record in _execute(todo, workers, alpha, deadline):
        fresh.append(record)
        if log:
            log.parent.mkdir(parents=True, exist_ok=True)
            with log.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(record, default=str) + "\n")
        if verbose:
            c = record.get("claims") or {}
            print(f"  {record['id']:<28} {'L' if record['labelled'] else 'U'} {record['seconds']:6.1f} s "
                  f"{record.get('error') or sorted({**c.get('change', {})})}", flush=True)
    wanted = {c.id for n, count in sizes.items() for r in range(count) for c in (NullCase(t, n, r) for t in tables)}
    unique = {}
    for record in previous + fresh:  # one record per replicate, the first one logged
        if record["id"] in wanted:
            unique.setdefault(record["id"], record)
    return list(unique.values())


def _execute(cases: list[NullCase], workers: int, alpha: float, deadline: float | None) -> Iterator[dict]:
    if workers <= 1:
        for case in cases:
            if deadline is not None and time.time() > deadline:
                return
            yield run_case(case, alpha)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        pending = {}
        queue = iter(cases)
        for case in queue:
            pending[pool.submit(run_case, case, alpha)] = case
            if len(pending) >= 2 * workers:
                break
        while pending:
            finished = next(iter(_first_done(pending)))
            pending.pop(finished)
            yield finished.result()
            if deadline is not None and time.time() > deadline:
                continue  # let the running ones finish, start nothing new
            nxt = next(queue, None)
            if nxt is not None:
                pending[pool.submit(run_case, nxt, alpha)] = nxt


def _first_done(pending: dict):
    from concurrent.futures import FIRST_COMPLETED, wait

    done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
    return done
