"""Posted domain packs are bounded in slices and in the size of each expression, and an
oversized pack is refused fast (it used to be accepted and slowed every audit by ~50x)."""
from __future__ import annotations

import time

import pytest
import yaml
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings

YAML = {"Content-Type": "application/yaml"}


def pack(n_slices: int = 1, terms: int = 1, name: str = "limits_pack") -> str:
    expression = " or ".join(f"age > {i}" for i in range(terms))
    return yaml.safe_dump({
        "name": name, "title": "Limits", "description": "A SYNTHETIC pack for limit tests.", "version": "1",
        "task": "binary", "classes": ["a", "b"], "positive_class": "b", "metrics": ["accuracy"],
        "context": [{"name": "age", "type": "numeric", "min": 0, "max": 10000, "description": "Age."}],
        "slices": [{"name": f"s{i}", "expression": expression, "rationale": "A synthetic slice for a limit test.",
                    "reference": "None: synthetic test data only."} for i in range(n_slices)]})


@pytest.fixture
def client(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", scheduler=False, max_pack_kb=4096)
    with TestClient(create_app(settings)) as c:
        # warm up: the first pack request imports the slice language (pandas, numpy); time the check only
        assert c.post("/v1/domains", content=pack(1, 1, name="warm_up"), headers=YAML).status_code == 201
        yield c


def _timed(call):
    started = time.perf_counter()
    response = call()
    return response, time.perf_counter() - started


def test_count_terms_counts_predicates():
    from domains.expressions import count_terms, parse

    assert count_terms(parse("a == 1")) == 1
    assert count_terms(parse("0 <= age < 18 and (x in [1, 2] or not flag) and y is missing")) == 5
    assert count_terms(parse(" or ".join(f"age > {i}" for i in range(40)))) == 40


def test_a_pack_with_too_many_slices_is_refused_within_a_second(client):
    text = pack(3001)
    response, elapsed = _timed(lambda: client.post("/v1/domains", content=text, headers=YAML))
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "too_many_slices"
    assert error["details"] == {"limit": "CONTEXTSHIFT_MAX_PACK_SLICES", "maximum": 500}
    assert "500" in error["message"] and "CONTEXTSHIFT_MAX_PACK_SLICES" in error["message"]
    assert elapsed < 1.0, elapsed
    assert client.get("/v1/domains/limits_pack").status_code == 404


def test_an_expression_with_too_many_terms_is_refused_within_a_second(client):
    text = pack(1, 4000)
    assert len(yaml.safe_load(text)["slices"][0]["expression"]) > 4000
    response, elapsed = _timed(lambda: client.post("/v1/domains", content=text, headers=YAML))
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "expression_too_complex"
    assert error["details"]["limit"] == "CONTEXTSHIFT_MAX_EXPRESSION_CHARS" and error["details"]["maximum"] == 4000
    assert elapsed < 1.0, elapsed
    response = client.post("/v1/domains", content=pack(1, 300), headers=YAML)  # 300 short terms, < 4000 chars
    assert response.status_code == 422, response.text
    assert response.json()["error"]["details"] == {"limit": "CONTEXTSHIFT_MAX_EXPRESSION_TERMS", "maximum": 200,
                                                   "found": 300, "where": "slices[0].expression"}


def test_limits_apply_to_a_new_version_and_follow_the_settings(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", scheduler=False, max_pack_slices=3, max_expression_terms=5)
    with TestClient(create_app(settings)) as client:
        assert client.post("/v1/domains", content=pack(3, 5), headers=YAML).status_code == 201
        put = client.put("/v1/domains/limits_pack", content=pack(4, 1), headers=YAML)
        assert put.status_code == 413 and put.json()["error"]["details"]["maximum"] == 3, put.text
        put = client.put("/v1/domains/limits_pack", content=pack(2, 6), headers=YAML)
        assert put.status_code == 422 and put.json()["error"]["details"]["found"] == 6, put.text
        assert client.get("/v1/domains/limits_pack").json()["version"] == 1


def test_a_pack_within_the_limits_is_accepted(client):
    response = client.post("/v1/domains", content=pack(50, 20), headers=YAML)
    assert response.status_code == 201, response.text
    assert len(response.json()["slices"]) == 50
