"""The round store on SQLite and PostgreSQL: numbering, the series' domain, duplicates, the union."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from service.audits.store import AuditStore
from service.datasets.store import DatasetStore
from service.db import make_engine, migrate, session_factory
from service.errors import Conflict, InvalidRequest, NotFound
from service.packs.store import PackRegistry
from service.rounds.store import RoundStore

ROLES = {"id": "id", "label": "label", "prediction": "prediction", "clinical_site": "context",
         "annotator_id": "annotator", "validated": "feature"}


@pytest.fixture
def rounds(database_url, tmp_path):
    engine = make_engine(database_url)
    migrate(engine)
    sessions = session_factory(engine)
    datasets = DatasetStore(sessions, tmp_path / "data")
    yield RoundStore(sessions, datasets, AuditStore(sessions, tmp_path / "data"), PackRegistry(sessions))
    engine.dispose()


def _dataset(rounds, n, seed, *, domain="medical", ids=None, name="r"):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"id": ids if ids is not None else [f"{name}{i}" for i in range(n)],
                          "label": rng.choice(["benign", "malignant"], n),
                          "prediction": rng.choice(["benign", "malignant"], n),
                          "clinical_site": rng.choice(["site_a", "site_b"], n),
                          "annotator_id": rng.choice(["ann1", "ann2"], n), "validated": rng.random(n) < 0.5})
    columns = [{"name": c, "role": ROLES[c], "dtype": str(frame[c].dtype)} for c in frame.columns]
    return rounds.datasets.create(name=name, role="benchmark", domain=domain, frame=frame, columns=columns,
                                  validation={"success": True, "results": []}, sha256=f"{seed:064d}")


def test_rounds_are_numbered_and_the_first_fixes_the_domain(rounds):
    first = rounds.register("derm", dataset_id=_dataset(rounds, 50, 1).id, model="v1")
    second = rounds.register("derm", dataset_id=_dataset(rounds, 40, 2, name="s").id)
    assert (first.number, second.number) == (1, 2)
    assert rounds.series("derm").domain == "medical"
    assert [(s.name, s.n_rounds) for s in rounds.list_series()] == [("derm", 2)]
    assert rounds.round("derm", 1).model == "v1"
    with pytest.raises(Conflict):
        rounds.register("derm", dataset_id=first.dataset_id)
    other = _dataset(rounds, 30, 3, domain="deepfake", name="o")
    with pytest.raises(InvalidRequest):
        rounds.register("derm", dataset_id=other.id)
    with pytest.raises(NotFound):
        rounds.round("derm", 3)
    with pytest.raises(NotFound):
        rounds.register("derm", dataset_id="ds_missing")


def test_union_of_the_rounds_is_stored_once(rounds):
    rounds.register("derm", dataset_id=_dataset(rounds, 50, 1, ids=[f"x{i}" for i in range(50)]).id)
    rounds.register("derm", dataset_id=_dataset(rounds, 20, 2, ids=[f"x{i}" for i in range(20)], name="s").id)
    union, numbers = rounds.materialise_union("derm")
    frame = rounds.datasets.load_frame(union.id)
    assert numbers == [1, 2] and union.n_rows == 70 and union.role == "benchmark"
    assert frame["id"].is_unique  # the same id in two rounds names two items
    assert "annotator_id" not in frame.columns and "validated" not in frame.columns
    again, _ = rounds.materialise_union("derm")
    assert again.id == union.id


def test_migration_0005_downgrades_and_upgrades(database_url):
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import inspect

    from service.db import MIGRATIONS

    engine = make_engine(database_url)
    migrate(engine)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        cfg.attributes["connection"] = connection
        command.downgrade(cfg, "0004")
    assert "benchmark_rounds" not in inspect(engine).get_table_names()
    migrate(engine)
    assert {"benchmark_series", "benchmark_rounds"} <= set(inspect(engine).get_table_names())
    engine.dispose()
