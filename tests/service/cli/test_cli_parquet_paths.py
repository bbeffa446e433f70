"""``contextshift audit --benchmark/--production`` take a file, a Parquet directory or a glob."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from service.audits.local import load_pack, read_dataset
from service.datasets.paths import parquet_files
from service.errors import ServiceError
from tests.service.cli.test_cli import _run
from tests.service.datasets.test_register_datasets import write_parts


@pytest.fixture
def lake(tmp_path):
    from domains.examples import make_example

    bench, prod = make_example("deepfake", n_benchmark=1500, n_production=1500, shift="planted", random_state=5)
    write_parts(tmp_path / "bench", bench, n_parts=3)
    write_parts(tmp_path / "prod" / "day=1", prod.iloc[:700], n_parts=2)  # hive-style sub-folders
    write_parts(tmp_path / "prod" / "day=2", prod.iloc[700:], n_parts=2)
    (tmp_path / "prod" / "_SUCCESS").write_text("")
    return tmp_path, bench, prod


def test_directory_and_glob_read_as_one_frame(lake):
    tmp_path, bench, prod = lake
    pack = load_pack("deepfake")
    frame, roles = read_dataset(tmp_path / "bench", schema=None, pack=pack)
    pd.testing.assert_frame_equal(frame, bench.reset_index(drop=True), check_dtype=False)
    assert roles["label"] == "label"
    assert [p.parent.name for p in parquet_files(tmp_path / "prod")] == ["day=1"] * 2 + ["day=2"] * 2
    globbed, _ = read_dataset(f"{tmp_path}/prod/day=*/part-*.parquet", schema=None, pack=pack)
    assert len(globbed) == 1500
    with pytest.raises(ServiceError) as missing:
        read_dataset(f"{tmp_path}/nothing/*.parquet", schema=None, pack=pack)
    assert missing.value.code == "file_not_found"


@pytest.mark.slow
def test_audit_accepts_a_directory_and_a_glob(lake):
    tmp_path, _, _ = lake
    out = tmp_path / "r.json"
    res = _run("audit", "--benchmark", str(tmp_path / "bench"), "--production", f"{tmp_path}/prod/day=*/*.parquet",
               "--domain", "deepfake", "--json", str(out))
    assert res.returncode == 0, res.stderr
    result = json.loads(out.read_text())
    assert result["verdict"]["shift_detected"] is True and result["production"]["n_rows"] == 1500
