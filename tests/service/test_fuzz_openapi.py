"""Schema-driven fuzzing of every operation in /openapi.json against a real server, with and
without API keys: no 5xx, and every response matches the documented schema.

Bounded: a few examples per operation (``FUZZ_EXAMPLES``), so the run stays well under a minute.
"""
from __future__ import annotations

import os

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from tests.service.server import ServerProcess

KEY = "fuzz-key"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "4"))
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]


@pytest.fixture(scope="module", params=["open", "keys"])
def server(request, tmp_path_factory):
    env = {"CONTEXTSHIFT_API_KEYS": KEY if request.param == "keys" else "", "CONTEXTSHIFT_SCHEDULER": "false"}
    proc = ServerProcess(tmp_path_factory.mktemp(f"fuzz-{request.param}"), **env).start()
    yield request.param, proc
    proc.stop()


@pytest.mark.slow
def test_every_operation_no_5xx_and_schema_conformant(server):
    mode, proc = server
    spec = httpx.get(f"{proc.url}/openapi.json", timeout=30).json()
    operations = [result.ok() for result in schemathesis.openapi.from_dict(spec).get_all_operations()]
    assert len(operations) > 10
    header_sets = [{"Authorization": f"Bearer {KEY}"}, {}] if mode == "keys" else [{}]
    for operation in operations:
        _fuzz(operation, proc.url, header_sets, mode)


def _fuzz(operation, base_url: str, header_sets: list[dict], mode: str) -> None:
    @given(case=operation.as_strategy())
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def run(case):
        for headers in header_sets:
            response = case.call(base_url=base_url, headers=headers, timeout=60)
            case.validate_response(response, checks=CHECKS)
            if mode == "keys" and not headers and case.path.startswith("/v1/"):
                assert response.status_code in (401, 404, 405, 413, 422), (case.path, response.status_code)

    run()


@pytest.mark.slow
def test_document_states_non_json_bodies_errors_and_auth(server):
    """HTML, Markdown, CSV and JSON Lines bodies are documented as such, error answers as JSON
    (FastAPI filed an HTML report's 404 under text/html), and with keys every protected
    operation's 401."""
    mode, proc = server
    spec = httpx.get(f"{proc.url}/openapi.json", timeout=30).json()
    paths = spec["paths"]
    assert set(paths["/v1/audits/{audit_id}/report"]["get"]["responses"]["200"]["content"]) == {"text/html"}
    assert set(paths["/v1/audits/{audit_id}/report.md"]["get"]["responses"]["200"]["content"]) == {"text/markdown"}
    assert set(paths["/v1/audits/{audit_id}/next-round"]["get"]["responses"]["200"]["content"]) == {
        "application/json", "text/csv", "application/x-ndjson"}
    assert set(paths["/v1/monitors/{monitor_id}/report"]["get"]["responses"]["404"]["content"]) == {"application/json"}
    protected = [op for path, ops in paths.items() if path.startswith(("/v1/", "/metrics")) for op in ops.values()]
    if mode == "keys":
        assert all(op["security"] and set(op["responses"]["401"]["content"]) == {"application/json"}
                   for op in protected)
