"""Domain packs through the API: built-ins listed, custom YAML validated and stored."""
from __future__ import annotations

CUSTOM = """
name: retail_vision
title: Shelf product recognition
description: Product classifier on shelf photos.
task: binary
classes: [absent, present]
positive_class: present
context:
  - name: store_format
    type: categorical
    description: Store format
    values: [hyper, express]
slices:
  - name: express_stores
    expression: 'store_format == "express"'
    rationale: Express stores have narrow aisles and oblique views.
    reference: Internal field study 2025, shelf imaging report
metrics: [sensitivity, specificity]
"""


def test_builtin_packs_listed(client):
    items = {d["name"]: d for d in client.get("/v1/domains").json()["items"]}
    assert {"facial_expression", "deepfake", "dermatology", "generic"} <= set(items)
    assert items["dermatology"]["n_slices"] >= 8 and items["dermatology"]["builtin"] is True
    assert items["dermatology"]["aliases"] == ["medical"] and "medical" not in items  # listed once, by its name
    assert items["generic"]["aliases"] == []
    medical = client.get("/v1/domains/medical").json()  # the former name still reads the pack
    assert medical["name"] == "dermatology" and medical["slices"] and medical["aliases"] == ["medical"]
    assert client.get("/v1/domains/dermatology").json() == medical


def test_custom_pack_round_trip(client):
    res = client.post("/v1/domains", content=CUSTOM, headers={"Content-Type": "application/yaml"})
    assert res.status_code == 201, res.text
    assert client.get("/v1/domains/retail_vision").json()["slices"][0]["name"] == "express_stores"
    again = client.post("/v1/domains", content=CUSTOM, headers={"Content-Type": "application/yaml"})
    assert again.status_code == 409


def test_malformed_pack_names_the_fault(client):
    broken = CUSTOM.replace('store_format == "express"', 'store_fromat == "express"')
    res = client.post("/v1/domains", content=broken, headers={"Content-Type": "application/yaml"})
    error = res.json()["error"]
    assert res.status_code == 422 and error["code"] == "invalid_domain_pack"
    assert "store_fromat" in error["message"] and "express_stores" in error["message"]


def test_builtin_name_cannot_be_replaced(client):
    res = client.post("/v1/domains", content=CUSTOM.replace("retail_vision", "medical"))
    assert res.status_code == 409


def test_unknown_domain_is_404(client):
    res = client.get("/v1/domains/astrology")
    assert res.status_code == 404 and res.json()["error"]["code"] == "unknown_domain"


def test_the_former_name_medical_is_accepted_wherever_a_domain_name_is(client):
    from service.audits.local import load_pack

    assert load_pack("medical") is load_pack("dermatology")  # CLI --domain and the Python API
    packs = client.app.state.runtime.packs  # what audits, series and monitors resolve their stored domain with
    assert packs.get("medical") is packs.get("dermatology")
    taken = CUSTOM.replace("name: retail_vision", "name: medical")
    res = client.post("/v1/domains", content=taken, headers={"Content-Type": "application/yaml"})
    assert res.status_code == 409  # a custom pack cannot take the alias
