"""CSV dialects through the upload: semicolon- and tab-separated files, decimal commas, and a file whose
delimiter cannot be told, answered with what was found and how to name it."""
from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.service.newcomer_tables import SCHEMA, csv_bytes, titanic, upload


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from service.settings import Settings

    with TestClient(create_app(Settings(data_dir=tmp_path_factory.mktemp("dialect") / "data"))) as c:
        yield c


@pytest.fixture(scope="module")
def table():
    return titanic(seed=6)[0]


def _columns(body):
    return {c["name"]: c["dtype"] for c in body["columns"]}


@pytest.mark.slow
@pytest.mark.parametrize("sep, decimal", [(";", "."), (";", ","), ("\t", ".")])
def test_a_semicolon_or_tab_file_is_read_as_its_columns(client, table, sep, decimal):
    body = upload(client, csv_bytes(table, sep=sep, decimal=decimal), f"dialect-{ord(sep)}-{decimal}", "benchmark",
                  SCHEMA).json()
    columns = _columns(body)
    assert list(columns) == list(table.columns)
    assert columns["age"].startswith("float") and columns["prob_yes"].startswith("float")
    assert body["n_rows"] == len(table)


def test_a_decimal_comma_file_has_the_same_values_as_the_comma_file(client, table):
    plain = upload(client, csv_bytes(table), "values-plain", "benchmark", SCHEMA).json()
    european = upload(client, csv_bytes(table, sep=";", decimal=","), "values-eu", "benchmark", SCHEMA).json()
    assert _columns(plain) == _columns(european)


def test_a_short_row_names_the_delimiter_and_how_to_pass_one(client, table):
    text = csv_bytes(table.head(40), sep=";").decode().splitlines()
    text[30] = ";".join(text[30].split(";")[:-1])  # one field short
    res = upload(client, "\n".join(text).encode(), "short-row", "benchmark", expect=400).json()["error"]
    assert res["code"] == "ragged_row" and "semicolon (';')" in res["message"]
    assert "form field 'delimiter'" in res["message"]


def test_a_file_no_delimiter_splits_consistently_is_refused_with_the_splits_found(client):
    body = b"a;b;c\n1;2\n3;4;5;6\n"
    res = upload(client, body, "unclear", "benchmark", expect=400).json()["error"]
    assert res["code"] == "csv_dialect" and "3 fields on semicolon (';')" in res["message"]
    assert "form field 'delimiter'" in res["message"]


def test_the_delimiter_named_by_the_user_is_used(client, table):
    body = csv_bytes(table.head(50), sep="|")
    res = client.post("/v1/datasets", files={"file": ("piped.csv", body)},
                      data={"name": "piped", "role": "benchmark", "delimiter": "pipe"})
    assert res.status_code == 201, res.text and list(_columns(res.json())) == list(table.columns)
    bad = client.post("/v1/datasets", files={"file": ("piped.csv", body)},
                      data={"name": "piped2", "role": "benchmark", "delimiter": "colon"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_delimiter"


def _cli(*args):
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "service.cli", "audit", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "DO_NOT_TRACK": "1"})


@pytest.mark.slow
def test_the_cli_names_the_delimiter_option_and_uses_it(tmp_path, table):
    (tmp_path / "unclear.csv").write_bytes(b"a;b;c\n1;2\n3;4;5;6\n")
    (tmp_path / "bench.csv").write_bytes(csv_bytes(table))
    out = _cli("--benchmark", str(tmp_path / "bench.csv"), "--production", str(tmp_path / "unclear.csv"))
    assert out.returncode == 2 and "--delimiter" in out.stderr
    (tmp_path / "piped.csv").write_bytes(csv_bytes(table, sep="|"))
    (tmp_path / "bench-piped.csv").write_bytes(csv_bytes(table, sep="|"))
    out = _cli("--benchmark", str(tmp_path / "bench-piped.csv"), "--production", str(tmp_path / "piped.csv"),
               "--delimiter", "pipe", "--budget", "20", "--json", str(tmp_path / "audit.json"))
    assert out.returncode == 0, out.stderr
    result = __import__("json").loads((tmp_path / "audit.json").read_text())
    assert "prob_yes" in {f["name"] for f in result["covariate"]["features"]}
