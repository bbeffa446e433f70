"""A SQL monitor takes only the rows newer than its watermark: on the local PostgreSQL (skipped
with the reason when unreachable) and on a SQLite file. All data SYNTHETIC."""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine

from service.app import create_app
from service.monitors.sources import SourceLimits
from service.monitors.sql_source import SqlSource
from service.settings import Settings
from tests.service.monitor_support import synthetic_frame, upload_benchmark, wait_run

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _take(source, url, watermark, **limits):
    """One run of a SQL source under the settings' limits (read now), ``limits`` replacing some."""
    return SqlSource(source, url=url, limits=replace(SourceLimits.of(Settings()), **limits)).take(set(), watermark)


def _rows(n, seed, offset, epoch):
    frame = synthetic_frame(n, seed)
    stamps = [START + timedelta(minutes=offset + i) for i in range(n)]
    frame["ts"] = [int(s.timestamp()) for s in stamps] if epoch else stamps
    return frame


@pytest.fixture(params=["postgresql", "sqlite"])
def warehouse(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'warehouse.db'}", True
    return request.getfixturevalue("postgres_schema_url"), False


@pytest.mark.slow
def test_sql_monitor_takes_only_new_rows(tmp_path, warehouse):
    url, epoch = warehouse
    engine = create_engine(url)
    table = f"events_{tmp_path.name[-8:].replace('-', '_')}"
    _rows(200, 1, 0, epoch).to_sql(table, engine, index=False, if_exists="replace")
    settings = Settings(data_dir=tmp_path / "data", scheduler=False, monitor_databases={"warehouse": url})
    with TestClient(create_app(settings)) as client:
        bench = upload_benchmark(client, synthetic_frame(600, 0))
        created = client.post("/v1/monitors", json={
            "name": "sql", "benchmark": bench, "options": {"discovery": False},
            "source": {"type": "sql", "database": "warehouse", "query": f"SELECT * FROM {table}",
                       "timestamp_column": "ts"},
            "schedule": {"interval_seconds": 3600}})
        assert created.status_code == 201, created.text
        assert "postgresql" not in created.text and "sqlite" not in created.text  # no URL travels
        monitor = created.json()["id"]

        def run():
            return wait_run(client, monitor, client.post(f"/v1/monitors/{monitor}/run").json()["run_id"])

        first = run()
        assert (first["status"], first["n_rows"]) == ("succeeded", 200), first
        assert run()["status"] == "no_new_data"
        _rows(150, 2, 200, epoch).to_sql(table, engine, index=False, if_exists="append")
        second = run()
        assert (second["status"], second["n_rows"]) == ("succeeded", 150), second
        assert run()["status"] == "no_new_data"
        audit = client.get(f"/v1/audits/{second['audit_id']}").json()
        assert audit["production"]["n_rows"] == 150
    engine.dispose()


# ---------------------------------------------------------------- attacks on the SQL source
# Each query below was found to run on the old source (which pasted it into
# "SELECT * FROM (<query>) AS q"): it must be refused at definition and again before every run,
# and the victim table and the target file must survive it.

def _attacks(target: str) -> dict[str, str]:
    return {
        "stacked_drop": "SELECT * FROM events) AS q0; DROP TABLE victim; COMMIT; "
                        "SELECT * FROM (SELECT * FROM events",
        "stacked_delete": "SELECT * FROM events) AS q0; DELETE FROM victim; COMMIT; "
                          "SELECT * FROM (SELECT * FROM events",
        "stacked_create": "SELECT * FROM events) AS q0; CREATE TABLE made (x int); COMMIT; "
                          "SELECT * FROM (SELECT * FROM events",
        "copy_to_file": f"SELECT * FROM events) AS q0; COPY (SELECT 1) TO '{target}'; "
                        "SELECT * FROM (SELECT * FROM events",
        "copy_alone": f"COPY (SELECT 1 AS ts) TO '{target}'",
        "lo_export": f"SELECT lo_export(lo_from_bytea(0, 'owned'), '{target}') AS ts, 1 AS x",
        "lo_export_quoted": f"SELECT \"lo_export\"(lo_from_bytea(0, 'owned'), '{target}') AS ts",
        "lo_unlink": "SELECT lo_unlink(1) AS ts",
        "pg_read_file": "SELECT pg_read_file('/etc/hostname') AS secret, ts FROM events",
        "pg_read_qualified": "SELECT pg_catalog.pg_read_binary_file('/etc/hostname') AS secret, ts FROM events",
        "pg_ls_dir": "SELECT pg_ls_dir('.') AS name, 1 AS ts",
        "pg_sleep": "SELECT pg_sleep(25), ts FROM events",
        "catalog": "SELECT usename AS ts FROM pg_shadow",
        "information_schema": "SELECT table_name AS ts FROM information_schema.tables",
        "dblink": "SELECT * FROM dblink('dbname=test', 'DROP TABLE victim') AS t(ts int)",
        "set_config": "SELECT set_config('default_transaction_read_only', 'off', false) AS ts",
        "query_to_xml": "SELECT query_to_xml('DELETE FROM victim RETURNING *', true, true, '') AS ts",
        "modifying_cte": "WITH gone AS (DELETE FROM victim RETURNING *) SELECT * FROM events",
        "select_into": "SELECT * INTO stolen FROM events",
        "for_update": "SELECT * FROM events FOR UPDATE",
        "for_key_share": "SELECT * FROM events FOR KEY SHARE",
        "line_comment_hides_statement": "SELECT * FROM events -- x\n; DROP TABLE victim",
        "block_comment_hides_statement": "SELECT * FROM events /* ) AS q */; DROP TABLE victim",
        "nested_comment": "SELECT * FROM events /* /* */ ; DROP TABLE victim; */",
        "backslash_quote": "SELECT 'a\\' , pg_read_file('/etc/hostname') , ' ' AS ts FROM events",
        "dollar_hides_call": "SELECT $x$ $x$, lo_export(1, '/tmp/x') AS ts",
        "unicode_escape": "SELECT U&\"\\006co_export\"(1, '/tmp/x') AS ts",
        "not_a_select": "DELETE FROM victim",
        "load_extension": "SELECT load_extension('/tmp/evil.so') AS ts",
        "writefile": f"SELECT writefile('{target}', 'owned') AS ts",
    }


def _victim(engine) -> None:
    from sqlalchemy import text

    with engine.begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS victim"))
        conn.execute(text("CREATE TABLE victim (x integer)"))
        conn.execute(text("INSERT INTO victim VALUES (1), (2), (3)"))
    _rows(50, 1, 0, engine.dialect.name == "sqlite").to_sql("events", engine, index=False, if_exists="replace")


def _victim_rows(engine) -> int:
    from sqlalchemy import inspect, text

    assert "victim" in inspect(engine).get_table_names(), "the victim table was dropped"
    assert "made" not in inspect(engine).get_table_names() and "stolen" not in inspect(engine).get_table_names()
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM victim")).scalar_one()


@pytest.fixture
def attacked(tmp_path, warehouse):
    url, _ = warehouse
    engine = create_engine(url)
    _victim(engine)
    yield url, engine, tmp_path / "written-by-the-database.txt"
    engine.dispose()


def test_attacks_are_refused_at_definition(tmp_path, attacked):
    url, engine, target = attacked
    settings = Settings(data_dir=tmp_path / "data", scheduler=False, monitor_databases={"warehouse": url})
    with TestClient(create_app(settings)) as client:
        bench = upload_benchmark(client, synthetic_frame(200, 0))
        for name, query in _attacks(str(target)).items():
            response = client.post("/v1/monitors", json={
                "name": name, "benchmark": bench, "options": {"discovery": False},
                "source": {"type": "sql", "database": "warehouse", "query": query, "timestamp_column": "ts"},
                "schedule": {"interval_seconds": 3600}})
            assert response.status_code == 422, (name, response.text)
            assert response.json()["error"]["code"] == "unsafe_query", (name, response.text)
        assert client.get("/v1/monitors").json()["items"] == []
    assert _victim_rows(engine) == 3
    assert not target.exists()


def test_attacks_are_refused_before_every_run(attacked):
    """A stored definition is checked again by the run itself (it may predate the rules)."""
    from service.monitors.sql_guard import UnsafeQuery

    url, engine, target = attacked
    for name, query in _attacks(str(target)).items():
        source = {"type": "sql", "database": "warehouse", "query": query, "timestamp_column": "ts"}
        with pytest.raises(UnsafeQuery):
            _take(source, url, None, query_timeout_s=5)
        assert _victim_rows(engine) == 3, name
    assert not target.exists()


def test_a_plain_select_with_comments_quotes_and_casts_still_runs(attacked):

    url, engine, _ = attacked
    query = ("SELECT ts, x1, 'a;b -- c /* d' AS note, '10:30' AS clock, \"region\" AS place -- the region\n"
             "FROM events /* all rows */ WHERE label IN (0, 1) AND note_or_not IS NULL;")
    with engine.begin() as conn:
        from sqlalchemy import text

        conn.execute(text("ALTER TABLE events ADD COLUMN note_or_not integer"))
    batch = _take({"query": query, "timestamp_column": "ts"}, url, None, query_timeout_s=10)
    assert len(batch.frame) == 50 and set(batch.frame["note"]) == {"a;b -- c /* d"}
    assert set(batch.frame["clock"]) == {"10:30"}  # a ':' in a string is no bind parameter


def test_writes_the_check_cannot_see_fail_in_the_read_only_transaction(attacked):
    """A user-defined function that writes passes the name check; the READ ONLY transaction
    (PostgreSQL) or query_only (SQLite) still refuses the write."""
    from sqlalchemy import text

    from service.errors import ServiceError
    from service.monitors.sql_source import read_only

    url, engine, _ = attacked
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            conn.execute(text("CREATE OR REPLACE FUNCTION sneaky() RETURNS integer LANGUAGE sql AS "
                              "'DELETE FROM victim; SELECT 1'"))
        with pytest.raises(ServiceError) as raised:
            _take({"query": "SELECT sneaky() AS ts, 1 AS x", "timestamp_column": "ts"}, url, None, query_timeout_s=10)
        assert raised.value.details["kind"] == "read_only", raised.value.to_body()
    with engine.connect() as conn, pytest.raises(Exception):
        with read_only(conn, 10):
            conn.execute(text("DELETE FROM victim"))
    assert _victim_rows(engine) == 3


def _slow_query(dialect: str) -> str:
    if dialect == "postgresql":
        # CPU only: two small series, 10^10 pairs (one huge series would be spooled to disk)
        return "SELECT count(*) AS ts FROM generate_series(1, 100000) AS a, generate_series(1, 100000) AS b"
    return "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) AS ts FROM c"


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_slow_query_is_cancelled_at_the_timeout(attacked, monkeypatch):
    import time

    from service.errors import ServiceError

    url, engine, _ = attacked
    monkeypatch.setenv("CONTEXTSHIFT_MONITOR_QUERY_TIMEOUT_S", "1")  # the setting, read by the run
    started = time.monotonic()
    with pytest.raises(ServiceError) as raised:
        _take({"query": _slow_query(engine.dialect.name), "timestamp_column": "ts"}, url, None)
    elapsed = time.monotonic() - started
    assert raised.value.details["kind"] == "timeout", raised.value.to_body()
    assert raised.value.code == "source_query_failed"
    assert elapsed < 15, elapsed
    assert _victim_rows(engine) == 3  # the database is usable again at once


def test_a_failed_query_says_its_kind_and_never_the_values(attacked):
    from sqlalchemy import text

    from service.errors import ServiceError

    url, engine, _ = attacked
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE secrets (secret varchar(64), ts integer)"))
        conn.execute(text("INSERT INTO secrets VALUES ('hunter2-very-secret', 1)"))
    cases = {"missing_column": "SELECT nope AS ts FROM events", "missing_table": "SELECT * FROM nowhere",
             "syntax": "SELECT , ts FROM events"}
    if engine.dialect.name == "postgresql":  # PostgreSQL quotes the offending value in its message
        cases["bad_value"] = "SELECT CAST(secret AS integer) AS ts FROM secrets"
    for kind, query in cases.items():
        with pytest.raises(ServiceError) as raised:
            _take({"query": query, "timestamp_column": "ts"}, url, None, query_timeout_s=10)
        body = raised.value.to_body()
        assert body["error"]["details"]["kind"] == kind, (kind, body)
        assert "hunter2" not in str(body) and "nope" not in str(body) and "nowhere" not in str(body), body
    with pytest.raises(ServiceError) as raised:  # the query runs but lacks the timestamp column
        _take({"query": "SELECT x1 FROM events", "timestamp_column": "ts"}, url, None, query_timeout_s=10)
    assert raised.value.details["kind"] == "missing_column"


def test_a_full_run_leaves_the_rows_of_its_last_timestamp_for_the_next(tmp_path, warehouse):
    """Runs of at most 40 rows take 130 rows whose timestamps come in tens exactly once."""

    url, epoch = warehouse
    engine = create_engine(url)
    frame = _rows(130, 3, 0, epoch)
    frame["ts"] = [frame["ts"].iloc[(i // 10) * 10] for i in range(len(frame))]  # 10 rows per timestamp
    frame.to_sql("tied", engine, index=False, if_exists="replace")
    source, mark, seen, runs = {"query": "SELECT * FROM tied", "timestamp_column": "ts"}, None, [], []
    for _ in range(20):
        batch = _take(source, url, mark, max_rows=40, query_timeout_s=10)
        if batch.empty:
            break
        runs.append(len(batch.frame))
        seen += list(batch.frame["id"])
        mark = batch.watermark
        assert batch.notes if len(batch.frame) >= 30 else True
    engine.dispose()
    assert sorted(seen) == sorted(frame["id"]) and max(runs) <= 40, runs


def _role_url(url: str, role: str) -> str:
    return url.replace("postgres@", f"{role}@", 1)


def test_the_monitor_warns_when_its_database_user_is_unsafe(tmp_path, postgres_schema_url):
    """A superuser or a user who can write gets a warning on the monitor; a read-only one none."""
    import uuid

    from sqlalchemy import text

    url = postgres_schema_url
    engine = create_engine(url)
    _rows(30, 1, 0, False).to_sql("events", engine, index=False, if_exists="replace")
    reader, writer = f"cs_reader_{uuid.uuid4().hex[:8]}", f"cs_writer_{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        schema = conn.execute(text("SELECT current_schema()")).scalar_one()
        superuser = conn.execute(text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")).scalar_one()
        for role in (reader, writer):
            conn.execute(text(f'CREATE ROLE "{role}" LOGIN'))
            conn.execute(text(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"'))
            conn.execute(text(f'GRANT SELECT ON events TO "{role}"'))
        conn.execute(text(f'GRANT INSERT, DELETE ON events TO "{writer}"'))
    databases = {"admin": url, "reader": _role_url(url, reader), "writer": _role_url(url, writer)}
    try:
        settings = Settings(data_dir=tmp_path / "data", scheduler=False, monitor_databases=databases)
        with TestClient(create_app(settings)) as client:
            bench = upload_benchmark(client, synthetic_frame(200, 0))
            warnings = {}
            for database in databases:
                created = client.post("/v1/monitors", json={
                    "name": database, "benchmark": bench, "options": {"discovery": False},
                    "source": {"type": "sql", "database": database, "query": "SELECT * FROM events",
                               "timestamp_column": "ts"}, "schedule": {"interval_seconds": 3600}})
                assert created.status_code == 201, created.text
                shown = client.get(f"/v1/monitors/{created.json()['id']}").json()
                assert shown["source_warnings"] == created.json()["source_warnings"]
                assert "warnings" not in shown["source"]
                warnings[database] = shown["source_warnings"]
    finally:
        with engine.begin() as conn:
            for role in (reader, writer):
                conn.execute(text(f'DROP OWNED BY "{role}"'))
                conn.execute(text(f'DROP ROLE "{role}"'))
        engine.dispose()
    assert warnings["reader"] == [], warnings
    assert any("can write" in w and writer in w for w in warnings["writer"]), warnings
    if superuser:
        assert any("superuser" in w for w in warnings["admin"]), warnings
    assert all("unsafe" in w for w in warnings["admin"] + warnings["writer"])


def test_a_sqlite_source_has_no_warnings(tmp_path):
    url = f"sqlite:///{tmp_path / 'w.db'}"
    engine = create_engine(url)
    _rows(30, 1, 0, True).to_sql("events", engine, index=False)
    engine.dispose()
    settings = Settings(data_dir=tmp_path / "data", scheduler=False, monitor_databases={"w": url})
    with TestClient(create_app(settings)) as client:
        bench = upload_benchmark(client, synthetic_frame(200, 0))
        created = client.post("/v1/monitors", json={
            "name": "w", "benchmark": bench, "source": {"type": "sql", "database": "w",
                                                         "query": "SELECT * FROM events", "timestamp_column": "ts"},
            "schedule": {"interval_seconds": 3600}})
        assert created.status_code == 201, created.text
        assert created.json()["source_warnings"] == []
