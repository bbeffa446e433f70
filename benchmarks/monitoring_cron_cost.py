"""What one cron run costs: ``contextshift monitor run --config`` against a large benchmark.

A monitor run with new rows should cost about the tests of those rows: everything that depends on
the benchmark alone (reading it is unavoidable; its validation, column roles, content hash and
every fit on it are not) is done once per monitor. Measured here on SYNTHETIC data (the 7-column
frame of ``benchmarks/monitoring.py``), a ``--bench``-row benchmark and ``--batch`` new rows:

* ``tests alone``: the audit pipeline on the two frames already in memory, roles given and the
  benchmark-side fits warm in the reference cache (the floor a monitor run can reach);
* ``run in process``: ``service.monitors.local.run_config`` (what the cron command executes after
  start-up), a fresh reference cache object each time so its fits come from disk as in a new process;
* ``cron command``: the whole ``contextshift monitor run --config`` process, start-up included, and
  the same command when no new rows arrived, against ``python -c "import service.cli"``.

    python benchmarks/monitoring_cron_cost.py [--bench 200000] [--batch 500] [--reps 5]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

os.environ.setdefault("DO_NOT_TRACK", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.monitoring import frame  # noqa: E402


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cli(*args: str) -> tuple[float, float]:
    """Wall and CPU seconds of one process (CPU: the machine is shared, wall time is not ours alone)."""
    started, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise RuntimeError(done.stderr[-2000:])
    return time.perf_counter() - started, _children_cpu() - cpu


def _tests_alone(folder: Path, batch_file: Path) -> float:
    """The audit of the batch on in-memory frames with a warm memory cache: only the per-run tests."""
    import pandas as pd

    from audit import AuditData, run_audit
    from audit.options import AuditOptions
    from audit.pipeline.reference_cache import ReferenceCache, frame_digest
    from audit.roles import infer_roles
    from service.audits.local import load_pack

    bench, rows = pd.read_parquet(folder / "benchmark.parquet"), pd.read_parquet(batch_file)
    pack, roles = load_pack("generic"), infer_roles(bench.columns)
    cache, digest = ReferenceCache(folder / "tests-alone-cache"), frame_digest(bench)
    options = AuditOptions(alpha=0.05 / 2 / 52)

    def once() -> float:
        started = time.process_time()
        run_audit(AuditData(bench, roles, {"id": "b", "name": "b"}, digest=digest),
                  AuditData(rows, roles, {"id": "p", "name": "p"}), pack=pack, options=options, audit_id="alone",
                  reference_cache=cache)
        return time.process_time() - started

    once()  # fits the benchmark side into the cache
    return min(once() for _ in range(2))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    from service.monitors.local import run_config

    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(prefix="cron-cost-") as tmp:
        folder = Path(tmp)
        (folder / "drop").mkdir()
        frame(args.bench, rng).to_parquet(folder / "benchmark.parquet", index=False)
        config = folder / "monitor.yaml"
        config.write_text(yaml.safe_dump({"name": "cost", "benchmark": "benchmark.parquet", "state": "state.json",
                                          "source": {"type": "directory", "path": "drop", "pattern": "*.parquet"}}))
        n = 0

        def drop() -> Path:
            nonlocal n
            n += 1
            path = folder / "drop" / f"b{n:03d}.parquet"
            frame(args.batch, rng).to_parquet(path, index=False)
            return path

        drop()
        first = _cli("-m", "service.cli", "monitor", "run", "--config", str(config))  # cold: fits and stores
        in_process, commands, quiet, start_up = [], [], [], []
        run_config(str(config))  # imports of this process
        for _ in range(args.reps):
            drop()
            started = time.process_time()
            code, text = run_config(str(config))
            in_process.append(time.process_time() - started)
            if code == 2:
                raise RuntimeError(text)
            drop()
            commands.append(_cli("-m", "service.cli", "monitor", "run", "--config", str(config)))
            quiet.append(_cli("-m", "service.cli", "monitor", "run", "--config", str(config)))
            start_up.append(_cli("-c", "import service.cli"))
        steps = json.loads((folder / "state.json").read_text())["runs"][-1].get("timings")
        alone = _tests_alone(folder, drop())
    med = {k: float(np.median(v)) for k, v in (("in_process", in_process),)}
    for name, pairs in (("commands", commands), ("quiet", quiet), ("start_up", start_up)):
        med[name] = (float(np.median([w for w, _ in pairs])), float(np.median([c for _, c in pairs])))
    print(f"cron run: SYNTHETIC benchmark {args.bench:,} rows, {args.batch} new rows per run, {args.reps} repetitions"
          f" (CPU seconds; wall in brackets for whole processes)")
    print(f"  the tests of the new rows alone (in memory, warm cache)  : {alone:.2f} s")
    print(f"  run_config in process (fits from the disk cache)        : median {med['in_process']:.2f} s"
          f" = {med['in_process'] / alone:.2f}x the tests alone")
    print(f"  its steps (wall s): {steps}")
    print(f"  cron command, first run (cold cache)                     : {first[1]:.2f} s [{first[0]:.2f} s]")
    for name, label in (("commands", "cron command with new rows (start-up included)  "),
                        ("quiet", "cron command, no new rows                       "),
                        ("start_up", "python -c 'import service.cli' (start-up)       ")):
        print(f"  {label}         : median {med[name][1]:.2f} s [{med[name][0]:.2f} s]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
