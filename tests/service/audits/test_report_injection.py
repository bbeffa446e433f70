"""Report HTML is immune to script injection through column names and values."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.service.audit_support import wait_for_audit

pytestmark = pytest.mark.slow  # every test here takes seconds: make test-fast skips them

SCRIPT_COLUMN = "<script>alert(1)</script>"
IMG_COLUMN = '"><img src=x onerror=alert(2)>'
SCRIPT_VALUE = "<script>alert(3)</script>"


def _frame(n: int, rng, shifted: bool) -> pd.DataFrame:
    y = rng.integers(0, 2, n)
    correct = rng.random(n) < 0.85
    return pd.DataFrame({
        "id": np.arange(n),
        SCRIPT_COLUMN: rng.normal(1.0 if shifted else 0.0, 1, n),  # SYNTHETIC shift
        IMG_COLUMN: rng.choice([SCRIPT_VALUE, "plain"] if shifted else ["plain", "other"], n),
        "label": np.where(y == 1, "yes", "no"),
        "prediction": np.where(correct == (y == 1), "yes", "no"),
    })


def test_hostile_names_and_values_are_escaped(settings):
    rng = np.random.default_rng(0)
    with TestClient(create_app(settings)) as client:
        ids = []
        for role, shifted in (("benchmark", False), ("production", True)):
            csv = _frame(800, rng, shifted).to_csv(index=False).encode()
            escaped = IMG_COLUMN.replace(chr(34), chr(92) + chr(34))
            res = client.post("/v1/datasets", files={"file": (f"{role}.csv", csv)},
                              data={"name": role, "role": role,
                                    "schema": f'{{"columns": {{"{escaped}": "context"}}}}'})
            assert res.status_code == 201, res.text
            ids.append(res.json()["id"])
        audit = client.post("/v1/audits", json={"benchmark": ids[0], "production": ids[1]}).json()
        result = wait_for_audit(client, audit["id"])
        assert result["status"] == "succeeded", result.get("error")
        assert SCRIPT_COLUMN in {f["name"] for f in result["covariate"]["features"]}
        html = client.get(f"/v1/audits/{audit['id']}/report").text.lower()
    assert "<script" not in html and "<img" not in html  # only their escaped text may appear
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
