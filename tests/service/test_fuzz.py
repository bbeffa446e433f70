"""Property-based fuzzing of every route: whatever arrives, the answer is never a 5xx."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings as hyp_settings, strategies as st

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: (st.lists(inner, max_size=4)
                                   | st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                    max_leaves=12)
AUDIT_KEYS = st.fixed_dictionaries({}, optional={"benchmark": JSON, "production": JSON, "domain": JSON,
                                                 "options": st.dictionaries(st.sampled_from(
                                                     ["alpha", "correction", "seed", "budget", "discovery", "x"]),
                                                     JSON, max_size=3)})
FUZZ = hyp_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _ok(response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500])
    if response.status_code >= 400:
        assert set(response.json()["error"]) == {"code", "message", "details"}


@FUZZ
@given(body=AUDIT_KEYS | JSON)
def test_post_audits(client, body):
    _ok(client.post("/v1/audits", content=json.dumps(body), headers={"Content-Type": "application/json"}))


@FUZZ
@given(text=st.text(max_size=300))
def test_post_domains(client, text):
    _ok(client.post("/v1/domains", content=text.encode(), headers={"Content-Type": "application/yaml"}))


@FUZZ
@given(content=st.binary(max_size=400), filename=st.text(max_size=20), name=st.text(max_size=20),
       role=st.sampled_from(["benchmark", "production", "x", ""]), schema=st.none() | st.text(max_size=40))
def test_post_datasets(client, content, filename, name, role, schema):
    data = {"name": name, "role": role}
    if schema is not None:
        data["schema"] = schema
    _ok(client.post("/v1/datasets", files={"file": (filename or "f", content)}, data=data))


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/v1/datasets/{x}", "/v1/audits/{x}", "/v1/audits/{x}/report",
                                  "/v1/audits/{x}/report.md", "/v1/audits/{x}/next-round", "/v1/domains/{x}"])
@FUZZ
@given(value=st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc"], blacklist_characters="/?#%"),
                     min_size=1, max_size=30))
def test_get_by_id(client, path, value):
    _ok(client.get(path.replace("{x}", value)))
    _ok(client.get("/v1/audits/x/next-round", params={"format": value}))
