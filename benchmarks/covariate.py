"""Side-by-side covariate-shift benchmark: 200,000 rows x 25 columns a side.

Data (all shifts SYNTHETIC, made here): 20 numeric and 5 categorical columns; three of
them shifted in the current sample:

* ``num_0``  - 0.5 sigma mean shift (real: every tool should flag it);
* ``cat_0``  - category mix 40/30/20/10 % -> 25/30/25/20 % (real);
* ``num_1``  - 0.02 sigma mean shift (negligible: statistically detectable at this n, but
  practically irrelevant; it should NOT be flagged).

Tools, timed as fit on the reference + test of the current sample (median of
``--repeats`` runs, imports excluded):

* contextshift ``CovariateShiftDetector``;
* a bare ``numpy.sort`` of the 20 numeric columns of both samples (the floor);
* Evidently ``DataDriftPreset`` (in this venv);
* alibi-detect ``TabularDrift`` and NannyML ``UnivariateDriftCalculator`` (KS + chi-square,
  10 chunks) in their own venv, ``benchmarks/.peers-venv`` (created on first run: their
  pins - numpy<2 among them - clash with ours), fed the same data through a Parquet file.

Targets: Evidently / ours >= 20, alibi TabularDrift / ours > 1, ours / sort <= 2.

Run: ``python benchmarks/covariate.py`` (``--skip-peers`` for ours and the sort only).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("DO_NOT_TRACK", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from detectors import CovariateShiftDetector  # noqa: E402

PEERS_VENV = ROOT / "benchmarks" / ".peers-venv"
# nannyml imports statsmodels without declaring it; pyarrow wheels here need numpy>=2, so the
# peers read the Parquet files with fastparquet.
PEER_PINS = ["alibi-detect==0.13.0", "nannyml==0.13.1", "numpy<2", "numba<0.60", "plotly<6", "lightgbm<4.6",
             "statsmodels>=0.14,<0.15", "fastparquet"]
NUMERIC = [f"num_{i}" for i in range(20)]
CATEGORICAL = [f"cat_{i}" for i in range(5)]
LEVELS = np.array(["red", "green", "blue", "grey"], dtype=object)
SHIFTED = {"num_0": "real", "cat_0": "real", "num_1": "negligible"}


def make_data(n: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Reference and current frames with the synthetic shifts listed in the module docstring."""
    rng = np.random.default_rng(seed)

    def frame(mean_shift: dict, cat0_shares) -> pd.DataFrame:
        data = {c: rng.normal(mean_shift.get(c, 0.0), 1.0, n) for c in NUMERIC}
        for c in CATEGORICAL:
            data[c] = rng.choice(LEVELS, n, p=cat0_shares if c == "cat_0" else [0.4, 0.3, 0.2, 0.1])
        return pd.DataFrame(data)

    reference = frame({}, [0.4, 0.3, 0.2, 0.1])
    current = frame({"num_0": 0.5, "num_1": 0.02}, [0.25, 0.3, 0.25, 0.2])
    return reference, current


def median_time(run, repeats: int):
    times, result = timed_runs(run, repeats)
    return statistics.median(times), result


def timed_runs(run, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return times, result


def run_ours_and_floor(ref, cur, repeats) -> dict:
    """Ours (fit + test), ours (test only) and the sort floor, interleaved run by run so that
    each ratio compares runs made under the same machine load."""
    ref_columns = np.ascontiguousarray(ref[NUMERIC].to_numpy().T)  # layout extraction not timed
    cur_columns = np.ascontiguousarray(cur[NUMERIC].to_numpy().T)
    fitted = CovariateShiftDetector().fit(ref)
    runs = {"ours": [], "test_only": [], "floor": []}
    result = None
    for _ in range(repeats):
        runs["floor"] += timed_runs(lambda: (np.sort(ref_columns, axis=1), np.sort(cur_columns, axis=1)), 1)[0]
        times, result = timed_runs(lambda: CovariateShiftDetector().fit(ref).test(cur), 1)
        runs["ours"] += times
        runs["test_only"] += timed_runs(lambda: fitted.test(cur), 1)[0]
    runs["flagged"] = list(result.drifted)
    return runs


def run_evidently(ref, cur, repeats):
    from evidently import DataDefinition, Dataset, Report
    from evidently.presets import DataDriftPreset

    definition = DataDefinition(numerical_columns=NUMERIC, categorical_columns=CATEGORICAL)

    def run():
        report = Report([DataDriftPreset()], include_tests=True)
        return report.run(Dataset.from_pandas(cur, data_definition=definition),  # current first
                          Dataset.from_pandas(ref, data_definition=definition)).dict()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seconds, payload = median_time(run, repeats)
    flagged = [t["metric_config"]["params"]["column"] for t in payload["tests"]
               if t["name"].startswith("Value Drift for column") and t["status"] == "FAIL"]
    return seconds, flagged


PEER_SCRIPT = r'''
import json, statistics, sys, time, warnings
warnings.filterwarnings("ignore")
import pandas as pd
ref, cur = (pd.read_parquet(path, engine="fastparquet") for path in sys.argv[1:3])
numeric, categorical, repeats = json.loads(sys.argv[3]), json.loads(sys.argv[4]), int(sys.argv[5])
columns = numeric + categorical
out = {}

def timed(run):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter(); result = run(); times.append(time.perf_counter() - start)
    return statistics.median(times), result

try:
    from alibi_detect.cd import TabularDrift
    import numpy as np
    codes = {c: {v: i for i, v in enumerate(sorted(ref[c].unique()))} for c in categorical}
    def encode(frame):  # ordinal codes: TabularDrift wants one numeric array
        data = frame[columns].copy()
        for c in categorical:
            data[c] = data[c].map(codes[c]).fillna(len(codes[c]))
        return data.to_numpy(dtype=np.float64)
    x_ref, x_cur = encode(ref), encode(cur)  # encoding not timed
    cats = {columns.index(c): None for c in categorical}
    def run_alibi():
        detector = TabularDrift(x_ref, p_val=0.05, categories_per_feature=cats)
        return detector.predict(x_cur, drift_type="feature")["data"]["is_drift"]
    seconds, drift = timed(run_alibi)
    out["alibi TabularDrift"] = {"seconds": seconds, "flagged": [c for c, d in zip(columns, drift) if d]}
except Exception as exc:
    out["alibi TabularDrift"] = {"error": f"{type(exc).__name__}: {exc}"}

try:
    import nannyml as nml
    def run_nannyml():
        calc = nml.UnivariateDriftCalculator(column_names=columns, treat_as_categorical=categorical,
                                             continuous_methods=["kolmogorov_smirnov"],
                                             categorical_methods=["chi2"], chunk_number=10)
        return calc.fit(ref).calculate(cur).filter(period="analysis").to_df()
    seconds, table = timed(run_nannyml)
    flagged = [c for c in columns for m in ("kolmogorov_smirnov", "chi2")
               if (c, m, "alert") in table.columns and bool(table[(c, m, "alert")].any())]
    out["NannyML univariate"] = {"seconds": seconds, "flagged": flagged}
except Exception as exc:
    out["NannyML univariate"] = {"error": f"{type(exc).__name__}: {exc}"}
print("PEERS-JSON " + json.dumps(out))
'''


def ensure_peers_venv() -> Path:
    """The peers' venv, created with their pins on first use; raises RuntimeError with the reason."""
    python = PEERS_VENV / "bin" / "python"
    probe = [str(python), "-c", "import alibi_detect, nannyml, fastparquet"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(f"creating {PEERS_VENV} (pip install {' '.join(PEER_PINS)}) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True)
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PEER_PINS],
                             capture_output=True, text=True)
    if install.returncode != 0:
        raise RuntimeError("pip install failed: " + install.stderr.strip().splitlines()[-1])
    return python


def run_peers(ref, cur, repeats) -> dict:
    try:
        python = ensure_peers_venv()
    except (RuntimeError, subprocess.CalledProcessError, OSError) as exc:
        reason = f"could not be installed: {exc}"
        return {"alibi TabularDrift": {"error": reason}, "NannyML univariate": {"error": reason}}
    with tempfile.TemporaryDirectory() as tmp:
        ref_path, cur_path, script = Path(tmp, "ref.parquet"), Path(tmp, "cur.parquet"), Path(tmp, "peers.py")
        ref.to_parquet(ref_path), cur.to_parquet(cur_path), script.write_text(PEER_SCRIPT)
        done = subprocess.run([str(python), str(script), str(ref_path), str(cur_path), json.dumps(NUMERIC),
                               json.dumps(CATEGORICAL), str(repeats)], capture_output=True, text=True)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("PEERS-JSON ")), None)
    if line is None:
        reason = f"peer run failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}"
        return {"alibi TabularDrift": {"error": reason}, "NannyML univariate": {"error": reason}}
    return json.loads(line[len("PEERS-JSON "):])


def verdict(flagged: list[str]) -> str:
    missed = [c for c, kind in SHIFTED.items() if kind == "real" and c not in flagged]
    noise = [c for c in flagged if SHIFTED.get(c) != "real"]
    return f"missed real {missed or '-'}; flagged negligible/unshifted {noise or '-'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-peers", action="store_true", help="ours and the numpy sort floor only")
    args = parser.parse_args()
    ref, cur = make_data(args.rows)
    print(f"data: {args.rows:,} rows x {ref.shape[1]} columns a side (20 numeric, 5 categorical); "
          "SYNTHETIC shifts: num_0 +0.5 sd (real), cat_0 mix 40/30/20/10 -> 25/30/25/20 % (real), "
          "num_1 +0.02 sd (negligible)")
    print(f"timing: fit(reference) + test(current), imports excluded. The machine is shared and its load "
          f"drifts, so ours and the sort floor run interleaved, {args.repeats} times before and "
          f"{args.repeats} times after the peers (medians of all those runs); each peer: median of "
          f"{args.repeats} runs\n")
    first = run_ours_and_floor(ref, cur, args.repeats)
    rows = {}
    if not args.skip_peers:
        try:
            seconds, flagged = run_evidently(ref, cur, args.repeats)
            rows["Evidently DataDriftPreset"] = {"seconds": seconds, "flagged": flagged}
        except ImportError as exc:
            rows["Evidently DataDriftPreset"] = {"error": f"not importable: {exc}"}
        rows.update(run_peers(ref, cur, args.repeats))
    last = run_ours_and_floor(ref, cur, args.repeats)
    runs = {key: first[key] + last[key] for key in ("ours", "test_only", "floor")}
    ours, floor = statistics.median(runs["ours"]), statistics.median(runs["floor"])
    paired = statistics.median(o / f for o, f in zip(runs["ours"], runs["floor"]))
    rows = {"contextshift CovariateShiftDetector": {"seconds": ours, "flagged": first["flagged"]},
            "  (test only, reference fitted once)": {"seconds": statistics.median(runs["test_only"]),
                                                     "flagged": None},
            "numpy sort floor (20 numeric cols, both sides)": {"seconds": floor, "flagged": None}, **rows}
    width = max(map(len, rows))
    for name, row in rows.items():
        if "error" in row:
            print(f"{name:<{width}}  UNAVAILABLE: {row['error']}")
            continue
        flagged = "" if row["flagged"] is None else f"  flagged {row['flagged']}  ({verdict(row['flagged'])})"
        print(f"{name:<{width}}  {row['seconds']:8.3f} s  {row['seconds'] / ours:7.2f}x ours{flagged}")
    print("\ntargets:")
    print(f"  ours / sort floor       = {paired:6.2f}  (target <= 2)   {'PASS' if paired <= 2 else 'FAIL'}"
          "   (median of run-by-run ratios)")
    for name, target, check in (("Evidently DataDriftPreset", ">= 20", lambda r: r >= 20),
                                ("alibi TabularDrift", "> 1", lambda r: r > 1)):
        row = rows.get(name)
        if row is None or "error" in row:
            print(f"  {name} / ours: not measured ({'skipped' if row is None else 'peer unavailable'})")
        else:
            ratio = row["seconds"] / ours
            print(f"  {name} / ours = {ratio:6.2f}  (target {target})  {'PASS' if check(ratio) else 'FAIL'}")


if __name__ == "__main__":
    main()
