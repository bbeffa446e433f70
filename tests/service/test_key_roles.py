"""API keys with roles: every route x every role, 403 exactly where the role does not allow it.

Routes are enumerated from the app, so a route added without a role in ``service.key_roles``
fails here."""
from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.key_roles import PUBLIC, ROLES, ROUTE_ROLES, Keyring, allows
from service.settings import Settings

KEYS = {"read": "r-key", "audit": "a-key", "admin": "adm-key"}


def app_routes(app) -> list[tuple[str, str]]:
    found = []
    for entry in app.routes:
        contexts = entry.effective_route_contexts() if hasattr(entry, "effective_route_contexts") else [entry]
        for route in contexts:
            found += [(method, route.path) for method in sorted(route.methods or ())]
    return found


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("roles")
    keys_file = folder / "keys"
    keys_file.write_text(f"# role key\nread {KEYS['read']}\naudit {KEYS['audit']}  # the CI job\n")
    settings = Settings(data_dir=folder / "data", scheduler=False, api_keys=KEYS["admin"], api_keys_file=keys_file)
    app = create_app(settings)
    with TestClient(app) as client:
        yield app, client


def test_every_protected_route_has_a_role(keyed):
    app, _ = keyed
    routes = {r for r in app_routes(app) if r not in PUBLIC}
    assert routes - set(ROUTE_ROLES) == set(), "give these routes a role in service/key_roles.py"
    assert set(ROUTE_ROLES) - routes == set(), "roles listed for routes that do not exist"


def test_every_route_for_every_role(keyed):
    app, client = keyed
    checked = 0
    for method, path in app_routes(app):
        if (method, path) in PUBLIC:
            continue
        url = re.sub(r"\{[^}]+\}", "x", path)
        assert client.request(method, url).status_code == 401, (method, path)
        for role, key in KEYS.items():
            res = client.request(method, url, headers={"Authorization": f"Bearer {key}"})
            needed = ROUTE_ROLES[(method, path)]
            if allows(role, needed):
                assert res.status_code not in (401, 403), (method, path, role, res.text[:200])
            else:
                assert res.status_code == 403, (method, path, role, res.text[:200])
                assert res.json()["error"]["code"] == "forbidden" and needed in res.json()["error"]["message"]
            checked += 1
    assert checked == 3 * len(ROUTE_ROLES)


def test_public_routes_need_no_key(keyed):
    _, client = keyed
    assert client.get("/healthz").status_code == 200
    assert client.get("/openapi.json").status_code == 200


def test_openapi_lists_the_roles(keyed):
    _, client = keyed
    doc = client.get("/openapi.json").json()
    scheme = next(iter(doc["components"]["securitySchemes"].values()))
    assert all(f"`{role}`" in scheme["description"] for role in ROLES)
    upload = doc["paths"]["/v1/datasets"]["post"]
    assert upload["x-required-role"] == "audit" and list(upload["security"][0].values()) == [["audit"]]
    assert "403" in doc["paths"]["/v1/monitors"]["post"]["responses"]


def test_a_plain_key_is_admin(tmp_path):
    with TestClient(create_app(Settings(data_dir=tmp_path / "d", scheduler=False, api_keys="only"))) as client:
        res = client.delete("/v1/datasets/nope", headers={"Authorization": "Bearer only"})
        assert res.status_code == 404  # allowed (admin), the dataset just does not exist


@pytest.mark.parametrize("text, problem", [("writer k1\n", "expected '<role> <key>'"),
                                           ("read k1 extra\n", "expected '<role> <key>'"),
                                           ("read k1\nadmin k1\n", "two roles")])
def test_a_bad_keys_file_refuses_to_start(tmp_path, text, problem):
    keys_file = tmp_path / "keys"
    keys_file.write_text(text)
    with pytest.raises(ValueError, match=problem):
        Keyring.from_settings(Settings(data_dir=tmp_path, api_keys_file=keys_file))
