"""Optional API keys: every /v1 call needs a bearer key when keys are configured."""
from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings


@pytest.fixture
def keyed_client(tmp_path):
    settings = Settings(data_dir=tmp_path / "d", api_keys="k-one, k-two")
    with TestClient(create_app(settings)) as client:
        yield client


def test_keys_parsed_from_comma_separated_env(monkeypatch, tmp_path):
    monkeypatch.setenv("CONTEXTSHIFT_API_KEYS", "a,b")
    assert Settings(data_dir=tmp_path).api_keys == ["a", "b"]


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic k-one", "Bearer "])
def test_missing_or_wrong_key_is_401(keyed_client, header):
    headers = {"Authorization": header} if header else {}
    res = keyed_client.get("/v1/datasets", headers=headers)
    assert res.status_code in (401, 403)
    assert res.json()["error"]["code"] in ("unauthorized", "forbidden")


@pytest.mark.parametrize("key", ["k-one", "k-two"])
def test_valid_key_passes(keyed_client, key):
    assert keyed_client.get("/v1/datasets", headers={"Authorization": f"Bearer {key}"}).status_code == 200


def test_healthz_never_needs_a_key(keyed_client):
    assert keyed_client.get("/healthz").status_code == 200


def test_keys_are_never_logged(keyed_client, caplog):
    with caplog.at_level(logging.DEBUG):
        keyed_client.get("/v1/datasets", headers={"Authorization": "Bearer k-one"})
        keyed_client.get("/v1/datasets", headers={"Authorization": "Bearer guess"})
    assert "k-one" not in caplog.text and "guess" not in caplog.text
