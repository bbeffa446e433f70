"""The Dask engine gives the pandas engine's conclusions (SYNTHETIC planted shifts, domains.examples).

With a sample as large as the data, every sampled part sees the same rows as the pandas engine,
so the comparison isolates what the summaries compute: exact counts must agree exactly, the
numeric sketch tests within their stated error."""
from __future__ import annotations

import json

import numpy as np
import pytest

from audit.roles import infer_roles
from domains.examples import make_example
from service.audits.engine.dask_audit import audit_parquet, parquet_roles
from service.audits.engine.datasets import ParquetDataset
from service.audits.local import audit_frames, load_pack
from tests.service.audits.engine.parts import write_partitions

N = 4000


@pytest.fixture(scope="module")
def medical(tmp_path_factory):
    bench, prod = make_example("medical", n_benchmark=N, n_production=N, random_state=3)
    root = tmp_path_factory.mktemp("medical")
    write_partitions(bench, root / "benchmark", 4)
    write_partitions(prod, root / "production", 3)
    return bench, prod, root


def _pandas(bench, prod, pack):
    contexts = [c.name for c in pack.context]
    roles = [infer_roles(f.columns, context_columns=contexts) for f in (bench, prod)]
    return audit_frames(bench, prod, pack=pack, benchmark_roles=roles[0], production_roles=roles[1]).result_json


def _dask(root, pack, client, **options):
    from audit.options import AuditOptions

    datasets = [ParquetDataset.open(root / side) for side in ("benchmark", "production")]
    roles = [parquet_roles(d, schema=None, pack=pack) for d in datasets]
    opts = AuditOptions(engine="dask", **options)
    return audit_parquet(datasets[0], datasets[1], pack=pack, benchmark_roles=roles[0], production_roles=roles[1],
                         options=opts, progress=lambda f, s: None, client=client,
                         refs=({"id": "benchmark", "name": "benchmark"}, {"id": "production", "name": "production"}))


@pytest.fixture(scope="module")
def both(medical, dask_client):
    bench, prod, root = medical
    pack = load_pack("medical")
    return _pandas(bench, prod, pack), _dask(root, pack, dask_client, sample_rows=10 * N).result_json


@pytest.mark.slow
def test_same_type_and_engine_recorded(both):
    pandas_result, dask_result = both
    assert set(pandas_result) == set(dask_result)
    assert pandas_result["parameters"]["engine"] == {"name": "pandas"}
    engine = dask_result["parameters"]["engine"]
    assert engine["name"] == "dask" and engine["n_partitions"] == {"benchmark": 4, "production": 3}
    assert engine["sketch"]["rank_error"] < 0.005 and engine["exact"] and engine["sampled"]


@pytest.mark.slow
def test_same_drifted_columns_and_categorical_tests(both):
    pandas_result, dask_result = both
    drifted = lambda r: sorted(t["name"] for t in r["covariate"]["features"] if t["drifted"])  # noqa: E731
    assert drifted(pandas_result) == drifted(dask_result)
    by_name = {t["name"]: t for t in dask_result["covariate"]["features"]}
    for t in pandas_result["covariate"]["features"]:
        other = by_name[t["name"]]
        if t["method"] == "chi2":  # exact counts: the same statistic
            assert other["method"] == "chi2" and other["statistic"] == pytest.approx(t["statistic"], rel=1e-9)
        elif other["method"] == "ks_sketch":  # the exact statistic lies within the sketch's stated bounds
            low, high = other["details"]["ks_statistic_bounds"]
            assert low - 1e-12 <= t["details"]["ks_statistic"] <= high + 1e-12


def test_same_slice_metrics_from_exact_counts(both):
    pandas_result, dask_result = both
    ours = {s["name"]: s for s in dask_result["slices"]}
    for s in pandas_result["slices"]:
        if s["name"] not in ours:
            continue
        other = ours[s["name"]]
        assert (other["n_benchmark"], other["n_production"]) == (s["n_benchmark"], s["n_production"])
        assert other["benchmark_value"] == pytest.approx(s["benchmark_value"], abs=1e-12)
        assert other["benchmark_ci"] == pytest.approx(s["benchmark_ci"], abs=1e-9)


def test_same_conclusions(both):
    pandas_result, dask_result = both
    keys = lambda r: [lim["key"] for lim in r["limitations"][:3]]  # noqa: E731
    assert keys(dask_result) == keys(pandas_result)
    assert dask_result["verdict"]["severity"] == pandas_result["verdict"]["severity"]


@pytest.mark.slow
def test_sampled_audit_reports_every_row(medical, dask_client):
    _, _, root = medical
    outcome = _dask(root, load_pack("medical"), dask_client, sample_rows=1500)
    result = outcome.result_json
    assert 'id="engine"' in outcome.html and "uniform sample" in outcome.html  # the report says how it was computed
    assert result["benchmark"]["n_rows"] == N and result["production"]["n_rows"] == N
    sampled = result["parameters"]["engine"]["sample"]["production_rows"]
    assert 1000 < sampled < 2000  # Bernoulli(1500 / 4000) per row
    # slice counts come from every row, not from the sample
    bench, prod, _ = medical
    women = int((prod["sex"] == "female").sum()) if "sex" in prod else None
    if women is not None and any(s["name"] == "female" for s in result["slices"]):
        assert next(s for s in result["slices"] if s["name"] == "female")["n_production"] == women


@pytest.mark.slow
def test_cli_engine_dask_reads_directories_and_globs(medical, dask_client, tmp_path, capsys):
    from service.cli import main

    _, _, root = medical
    out = tmp_path / "audit.json"
    code = main(["audit", "--engine", "dask", "--scheduler", dask_client.scheduler.address, "--domain", "medical",
                 "--benchmark", str(root / "benchmark"), "--production", str(root / "production" / "part-*.parquet"),
                 "--json", str(out)])
    assert code in (0, 1)
    result = json.loads(out.read_text())
    assert result["parameters"]["engine"]["name"] == "dask"
    assert result["production"]["n_rows"] == N


def test_scan_does_not_depend_on_partitioning(medical, dask_client, tmp_path):
    from audit.engine.counts import ALL_ROWS
    from service.audits.engine.scan import ScanPlan, scan_files

    bench, _, _ = medical
    plan = ScanPlan(columns=("body_site",) if "body_site" in bench else (), numeric=(), label="label",
                    prediction="prediction")
    one = scan_files(dask_client, write_partitions(bench, tmp_path / "one", 1), plan)
    many = scan_files(dask_client, write_partitions(bench, tmp_path / "many", 7), plan)
    assert one.n_rows == many.n_rows == N
    assert dict(one.outcomes[ALL_ROWS].pairs) == dict(many.outcomes[ALL_ROWS].pairs)
    classes = sorted(one.outcomes[ALL_ROWS].classes())
    assert np.array_equal(one.outcomes[ALL_ROWS].confusion(classes), many.outcomes[ALL_ROWS].confusion(classes))


def test_an_empty_part_adds_no_rows_and_all_empty_parts_are_a_clear_error(medical, dask_client, tmp_path):
    """A writer with nothing to write leaves an empty Parquet file beside the others; it failed the scan
    (no batch to merge) and, sorted first, the column sample."""
    from audit.engine.counts import ALL_ROWS
    from service.audits.engine.datasets import EmptyDataset, ParquetDataset
    from service.audits.engine.scan import ScanPlan, scan_files

    bench, _, _ = medical
    files = write_partitions(bench, tmp_path / "parts", 3)
    bench.iloc[:0].to_parquet(tmp_path / "parts" / "part-00000-empty.parquet", index=False)
    with_empty, without = ParquetDataset.open(tmp_path / "parts"), ParquetDataset.from_files(files, name="parts")
    assert with_empty.n_rows == without.n_rows == N and with_empty.files == without.files
    assert with_empty.fingerprint != without.fingerprint  # a new file is a change of the dataset
    assert len(with_empty.head(10)) == 10
    plan = ScanPlan(columns=(), numeric=(), label="label", prediction="prediction")
    scan = scan_files(dask_client, list(with_empty.files), plan)
    assert scan.n_rows == N and sum(dict(scan.outcomes[ALL_ROWS].pairs).values()) == N
    (tmp_path / "none").mkdir()
    bench.iloc[:0].to_parquet(tmp_path / "none" / "part-0.parquet", index=False)
    with pytest.raises(EmptyDataset, match="has no rows"):
        ParquetDataset.open(tmp_path / "none")


def test_label_shift_from_exact_counts(both):
    pandas_result, dask_result = both
    ours, theirs = dask_result["label"], pandas_result["label"]
    assert ours["benchmark_prior"] == pytest.approx(theirs["benchmark_prior"], abs=1e-12)
    for cls, share in theirs["production_prior_estimate"].items():  # the intervals: different bootstraps
        assert ours["production_prior_estimate"][cls]["estimate"] == pytest.approx(share["estimate"], abs=1e-9)
    assert ours["is_shift"] == theirs["is_shift"]


def test_context_tests_from_exact_counts(both):
    pandas_result, dask_result = both
    ours = {(t["kind"], t["name"]): t for t in dask_result["semantic"]["contexts"]}
    for t in pandas_result["semantic"]["contexts"]:  # column chi-squares and slice-share z tests
        if t["method"] in ("chi2", "z_two_proportions"):
            assert ours[t["kind"], t["name"]]["statistic"] == pytest.approx(t["statistic"], rel=1e-9)
    untested = lambda r: sorted(u["name"] for u in r["semantic"]["untested_contexts"])  # noqa: E731
    assert untested(dask_result) == untested(pandas_result)


@pytest.mark.slow
def test_benchmark_scan_is_cached_across_audits(medical, dask_client, tmp_path, monkeypatch):
    """A second audit against the same benchmark scans only production, with the same result."""
    from audit.pipeline.reference_cache import ReferenceCache
    from service.audits.engine import dask_audit

    _, _, root = medical
    scanned = []
    real = dask_audit.scan_files
    monkeypatch.setattr(dask_audit, "scan_files", lambda client, files, plan, *a: scanned.append(files[0]) or
                        real(client, files, plan, *a))
    pack = load_pack("medical")
    datasets = [ParquetDataset.open(root / side) for side in ("benchmark", "production")]
    roles = [parquet_roles(d, schema=None, pack=pack) for d in datasets]
    from audit.options import AuditOptions

    cache = ReferenceCache(tmp_path / "cache")
    results = []
    for _ in range(2):
        outcome = audit_parquet(datasets[0], datasets[1], pack=pack, benchmark_roles=roles[0],
                                production_roles=roles[1], options=AuditOptions(engine="dask"),
                                progress=lambda f, s: None, client=dask_client, cache=cache,
                                refs=({"id": "b", "name": "b"}, {"id": "p", "name": "p"}))
        results.append(outcome.result_json)
    # the full benchmark pass ran once (the narrow passes that count discovered slices run each time)
    assert sum("benchmark" in f for f in scanned) == 1 + (len(scanned) - 3) // 2
    # the same findings; sketched numbers may differ within the sketch's error (DataSketches seeds
    # its compaction from the OS), the counted ones may not
    assert [lim["key"] for lim in results[0]["limitations"]] == [lim["key"] for lim in results[1]["limitations"]]
    assert [(s["name"], s["production_value"]) for s in results[0]["slices"]] == \
        [(s["name"], s["production_value"]) for s in results[1]["slices"]]


def test_cli_refuses_what_it_cannot_read(tmp_path, capsys):
    from service.cli import main

    (tmp_path / "notes.csv").write_text("a,b\n1,2\n")
    code = main(["audit", "--engine", "dask", "--benchmark", str(tmp_path / "missing"), "--production",
                 str(tmp_path / "notes.csv")])
    assert code == 2 and "file_not_found" in capsys.readouterr().err
    code = main(["audit", "--engine", "dask", "--benchmark", str(tmp_path / "notes.csv"), "--production",
                 str(tmp_path / "notes.csv")])
    assert code == 2 and "not_parquet" in capsys.readouterr().err


@pytest.mark.slow
def test_without_a_prediction_column_metrics_come_from_the_sample(dask_client, tmp_path):
    """Predictions derived from scores exist only on the sample: the engine says so and still audits."""
    bench, prod = make_example("medical", n_benchmark=2000, n_production=2000, random_state=5)
    write_partitions(bench.drop(columns=["prediction"]), tmp_path / "benchmark", 2)
    write_partitions(prod.drop(columns=["prediction"]), tmp_path / "production", 2)
    result = _dask(tmp_path, load_pack("medical"), dask_client, sample_rows=10_000).result_json
    engine = result["parameters"]["engine"]
    assert any("slice and overall metrics" in p for p in engine["sampled"])
    assert not any("slice and overall metrics" in p for p in engine["exact"])
    assert result["slices"] and all(s["n_production"] > 0 for s in result["slices"])
    weak = [lim for lim in result["limitations"] if lim["kind"] == "underperforming_slice"]
    assert weak and weak[0]["key"].startswith("underperforming_slice:fitzpatrick")  # the planted weak slice leads them
