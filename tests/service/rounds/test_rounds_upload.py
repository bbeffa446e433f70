"""A round labelled by several annotators per item: the upload checks (id, annotator) pairs for
uniqueness instead of ids alone, and the series reports one consensus label per item with the
annotators' agreement. SYNTHETIC labels on generated ids."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.datasets import validation
from service.datasets.unique_ids import SpilledIds

CLASSES = np.array(["a", "b", "c"])


def _multi_annotator_round(seed: int, n: int = 300, agreement: float = 0.9) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    truth = rng.choice(CLASSES, n)
    rows = []
    for i, y in enumerate(truth):
        pred = y if rng.random() < 0.8 else rng.choice(CLASSES[CLASSES != y])
        for who in ("p", "q", "r"):
            rows.append((f"i{i}", who, y if rng.random() < agreement else rng.choice(CLASSES), pred))
    return pd.DataFrame(rows, columns=["id", "annotator_id", "label", "prediction"])


def _csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from service.settings import Settings

    with TestClient(create_app(Settings(data_dir=tmp_path_factory.mktemp("multi") / "data"))) as c:
        yield c


def _post(client, frame, name):
    return client.post("/v1/datasets", files={"file": (f"{name}.csv", _csv(frame))},
                       data={"name": name, "role": "benchmark"})


@pytest.mark.slow
def test_a_round_with_several_annotators_per_item_uploads_and_reports_agreement(client):
    ids = []
    for k, agreement in enumerate((0.95, 0.95, 0.6)):
        res = _post(client, _multi_annotator_round(k, agreement=agreement), f"multi{k}")
        assert res.status_code == 201, res.text
        ids.append(res.json()["id"])
    for ds in ids:
        assert client.post("/v1/benchmarks/multi/rounds", json={"dataset": ds}).status_code == 201
    body = client.get("/v1/benchmarks/multi").json()
    first, last = body["rounds"][0], body["rounds"][-1]
    assert first["n"] == 300  # one consensus label per item, not one row per label
    assert first["annotators"]["n_annotators"] == 3 and first["annotators"]["alpha"] > 0.8
    assert first["annotators"]["alpha_ci_low"] < first["annotators"]["alpha"] < first["annotators"]["alpha_ci_high"]
    assert last["annotators"]["alpha"] < 0.6 and last["agreement_fell"]
    assert {"level", "procedure"} <= set(last["improvement"]) and "stalls" in body and "label_noise" in body
    guarded = client.get("/v1/benchmarks/multi", params={"min_gain": 0.05})
    assert guarded.status_code == 200 and guarded.json()["min_gain"] == 0.05
    assert client.get("/v1/benchmarks/multi", params={"min_gain": 0}).status_code == 422


def test_an_annotator_labelling_an_item_twice_is_refused(client):
    frame = _multi_annotator_round(5, n=50)
    frame = pd.concat([frame, frame.iloc[[0]]], ignore_index=True)
    res = _post(client, frame, "twice")
    assert res.status_code == 422, res.text
    failure = res.json()["error"]["details"]["failures"][0]
    assert failure["expectation"] == "expect_compound_columns_to_be_unique"


def test_repeated_ids_without_an_annotator_column_are_still_refused(client):
    frame = _multi_annotator_round(6, n=50).drop(columns="annotator_id")
    res = _post(client, frame, "noannotator")
    assert res.status_code == 422, res.text
    assert res.json()["error"]["details"]["failures"][0]["expectation"] == "expect_column_values_to_be_unique"


def test_schema_expectations_make_the_pair_unique_when_an_annotator_column_exists():
    frame = _multi_annotator_round(7, n=5)
    with_annotator = validation.schema_expectations(frame, {"id": "id", "annotator_id": "annotator",
                                                            "label": "label", "prediction": "prediction"})
    types = {(e.type, e.column, tuple(e.kwargs.get("column_list", ()))) for e in with_annotator}
    assert ("expect_compound_columns_to_be_unique", None, ("id", "annotator_id")) in types
    assert not any(t == "expect_column_values_to_be_unique" for t, _, _ in types)
    alone = validation.schema_expectations(frame, {"id": "id", "label": "label", "prediction": "prediction"})
    assert any(e.type == "expect_column_values_to_be_unique" and e.column == "id" for e in alone)


def test_spilled_ids_find_a_repeated_pair_across_chunks(tmp_path):
    spilled = SpilledIds(tmp_path)
    try:
        spilled.add(pd.DataFrame({"id": [1, 1, 2], "annotator_id": ["p", "q", "p"]}), 0)
        spilled.add(pd.DataFrame({"id": [1.0, 2.0, 3.0], "annotator_id": ["q", "q", None]}), 3)
        count, pairs = spilled.duplicates()
    finally:
        spilled.close()
    assert count == 1 and pairs == [[2, 4]]  # (1, "q") again in row 4; 1.0 reads as 1; a null pair is skipped


def test_a_repeated_item_and_annotator_pair_is_caught_across_chunks(tmp_path):
    """The (id, annotator) pair was only checked within one upload chunk: a repeat split across chunks passed."""
    import pandas as pd

    from service.datasets.chunk_validation import ChunkedValidation
    from service.datasets.validation import Expectation

    exp = Expectation("expect_compound_columns_to_be_unique", None, {"column_list": ["id", "annotator"]})
    first = pd.DataFrame({"id": ["a", "a", "b"], "annotator": ["x", "y", "x"]})
    second = pd.DataFrame({"id": ["c", "a"], "annotator": ["x", "y"]})  # ("a", "y") again
    with ChunkedValidation([exp], spill_dir=tmp_path) as check:
        assert check.add(first) and check.add(second)
        report = check.report()
    (entry,) = report["results"]
    assert not entry["success"] and entry["duplicate_rows"] == [[2, 5]]
    from service.datasets.upload import validation_failed

    assert "columns ['id', 'annotator']" in str(validation_failed("round.csv", report))
