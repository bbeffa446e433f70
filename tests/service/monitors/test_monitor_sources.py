"""Directory sources read only what lies in the roots, survive odd file names, and bound a run;
cron schedules must fire. All data SYNTHETIC."""
from __future__ import annotations

import hashlib
import os
from dataclasses import replace

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.errors import ServiceError
from service.monitors.directory_source import take_directory
from service.monitors.sources import SourceLimits, source_for
from service.settings import Settings
from tests.service.monitor_support import synthetic_frame, upload_benchmark


@pytest.fixture
def layout(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "drop").mkdir(parents=True)
    outside.mkdir()
    secret = outside / "secret.csv"
    secret.write_text("id,x1,secret\ns1,1.0,hunter2\n")
    return root, root / "drop", secret


def _write(folder, name, n, seed):
    frame = synthetic_frame(n, seed)
    frame.to_csv(folder / name, index=False)
    return frame


def test_a_file_swapped_for_a_symlink_after_listing_is_not_read(layout, monkeypatch):
    """The race: the folder is listed while a.csv is a plain file; before it is opened it is
    replaced by a symlink to a file outside the roots. The source must not read the secret."""
    from service.monitors import directory_source

    root, drop, secret = layout
    _write(drop, "a.csv", 20, 1)
    _write(drop, "b.csv", 20, 2)
    listed = directory_source._names

    def list_then_swap(*args, **kwargs):
        names = listed(*args, **kwargs)
        os.replace(drop / "a.csv", drop / "a.csv.old")
        os.symlink(secret, drop / "a.csv")
        return names

    monkeypatch.setattr(directory_source, "_names", list_then_swap)
    batch = take_directory({"path": str(drop), "pattern": "*.csv"}, set(), [root], max_rows=10**6, max_bytes=10**9)
    assert "secret" not in batch.frame.columns and "hunter2" not in batch.frame.to_csv()
    assert [os.path.basename(p) for p, _ in batch.files] == ["b.csv"]


LIMITS = SourceLimits(max_rows=10**6, max_file_bytes=10**9, max_sql_bytes=10**9, max_value_bytes=10**6,
                      query_timeout_s=10)


def test_a_source_takes_within_the_roots_and_limits_it_is_given(layout):
    """One protocol for every kind: the folder's files once, within the run's row limit, each later
    run only what is new."""
    root, drop, _ = layout
    _write(drop, "a.csv", 20, 1)
    _write(drop, "b.csv", 20, 2)
    source = source_for({"type": "directory", "path": str(drop), "pattern": "*.csv"}, roots=[root],
                        limits=SourceLimits(**{**LIMITS.__dict__, "max_rows": 30}))
    source.ready()
    first = source.take(set(), None)
    assert len(first.frame) == 20 and any("wait for the next run" in n for n in first.notes)
    second = source.take(set(first.files), None)
    assert len(second.frame) == 20 and not set(second.files) & set(first.files)
    assert source.take(set(first.files) | set(second.files), None).empty


def test_a_process_without_roots_or_the_database_refuses_clearly(layout):
    _, drop, _ = layout
    folder = source_for({"type": "directory", "path": str(drop)}, roots=[], limits=LIMITS)
    with pytest.raises(ServiceError) as raised:
        folder.ready()
    assert raised.value.code == "directory_sources_disabled" and "CONTEXTSHIFT_MONITOR_ROOTS" in raised.value.message
    query = source_for({"type": "sql", "database": "gone", "query": "SELECT 1 AS ts", "timestamp_column": "ts"},
                       databases={"warehouse": "sqlite://"}, limits=LIMITS)
    query.ready()  # a database is checked as each run takes: the run records the failure
    with pytest.raises(ServiceError) as raised:
        query.take(set(), None)
    assert raised.value.code == "unknown_database" and "'gone'" in raised.value.message
    with pytest.raises(ValueError, match="unknown monitor source type"):
        source_for({"type": "kafka"}, limits=LIMITS)


def test_the_hashed_bytes_are_the_parsed_bytes(layout, monkeypatch):
    """A file swapped for another regular file after it is opened: the open file is hashed and
    parsed, so the digest recorded is the digest of the rows taken."""
    from service.monitors import directory_source

    root, drop, _ = layout
    frame = _write(drop, "a.csv", 20, 1)
    original = hashlib.sha256((drop / "a.csv").read_bytes()).hexdigest()
    digest = directory_source._digest

    def digest_then_swap(fd):
        value = digest(fd)
        (drop / "other.csv").write_text("id,x1\nz,9\n")
        os.replace(drop / "other.csv", drop / "a.csv")
        return value

    monkeypatch.setattr(directory_source, "_digest", digest_then_swap)
    batch = take_directory({"path": str(drop), "pattern": "a.csv"}, set(), [root], max_rows=10**6, max_bytes=10**9)
    assert batch.files[0][1] == original
    assert list(batch.frame["id"]) == list(frame["id"])


def test_symlinks_and_fifos_in_the_folder_are_skipped(layout):
    root, drop, secret = layout
    _write(drop, "a.csv", 10, 1)
    os.symlink(secret, drop / "link.csv")
    os.mkfifo(drop / "pipe.csv")  # opening a FIFO for reading would block the run forever
    batch = take_directory({"path": str(drop), "pattern": "*.csv"}, set(), [root], max_rows=10**6, max_bytes=10**9)
    assert [os.path.basename(p) for p, _ in batch.files] == ["a.csv"]


def test_a_non_utf8_file_name_is_skipped_with_a_note(layout):
    root, drop, _ = layout
    _write(drop, "a.csv", 10, 1)
    fd = os.open(os.fsencode(str(drop)) + b"/caf\xe9.csv", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, synthetic_frame(5, 9).to_csv(index=False).encode())
    os.close(fd)
    batch = take_directory({"path": str(drop), "pattern": "*.csv"}, set(), [root], max_rows=10**6, max_bytes=10**9)
    for path, _ in batch.files:
        path.encode("utf-8")  # every recorded path can be stored (a surrogate would fail every later run)
    assert len(batch.files) == 1 and len(batch.frame) == 10
    assert any("not UTF-8" in note for note in batch.notes), batch.notes


def _drain(drop, root, **bounds):
    """Runs until nothing is new, under the settings' limits (read now), ``bounds`` replacing some."""
    limits = replace(SourceLimits.of(Settings()), **bounds)
    source = source_for({"type": "directory", "path": str(drop), "pattern": "*.csv"}, roots=[root], limits=limits)
    taken, runs = set(), []
    for _ in range(20):
        batch = source.take(taken, None)
        if batch.empty:
            return runs, batch
        runs.append(batch)
        taken |= set(batch.files)
    raise AssertionError("the files were never all taken")


def test_a_run_is_bounded_by_rows_and_leaves_the_rest_for_the_next(layout):
    root, drop, _ = layout
    frames = [_write(drop, f"f{i}.csv", 100, i) for i in range(5)]
    runs, _ = _drain(drop, root, max_rows=250, max_file_bytes=10**9)
    assert [len(b.frame) for b in runs] == [200, 200, 100]
    assert any("wait for the next run" in n for n in runs[0].notes), runs[0].notes
    taken = [i for b in runs for i in b.frame["id"]]
    assert sorted(taken) == sorted(i for f in frames for i in f["id"])  # none dropped, none twice


def test_a_run_is_bounded_by_bytes_and_the_setting_is_read(layout, monkeypatch):
    root, drop, _ = layout
    for i in range(4):
        _write(drop, f"f{i}.csv", 50, i)
    size = (drop / "f0.csv").stat().st_size
    monkeypatch.setenv("CONTEXTSHIFT_MONITOR_MAX_BYTES_PER_RUN", str(int(size * 2.5)))
    runs, _ = _drain(drop, root)
    assert [len(b.files) for b in runs] == [2, 2]


def test_a_file_bigger_than_a_whole_run_is_skipped_with_a_note_not_blocking_others(layout):
    root, drop, _ = layout
    _write(drop, "big.csv", 500, 1)
    _write(drop, "small.csv", 10, 2)
    batch = take_directory({"path": str(drop), "pattern": "*.csv"}, set(), [root], max_rows=100, max_bytes=10**9)
    assert [os.path.basename(p) for p, _ in batch.files] == ["small.csv"]
    assert any("big.csv" in n and "MAX_ROWS_PER_RUN" in n for n in batch.notes), batch.notes


def test_a_cron_schedule_that_never_fires_is_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    settings = Settings(data_dir=tmp_path / "data", scheduler=False, monitor_roots=[root])
    with TestClient(create_app(settings)) as client:
        bench = upload_benchmark(client, synthetic_frame(200, 0))

        def create(cron):
            return client.post("/v1/monitors", json={
                "name": "c", "benchmark": bench, "source": {"type": "directory", "path": str(root)},
                "schedule": {"cron": cron}})

        refused = create("0 0 31 2 *")
        assert refused.status_code == 422, refused.text
        error = refused.json()["error"]
        assert error["code"] == "cron_never_fires" and {"day", "month"} <= set(error["details"]["fields"])
        assert "day" in error["message"] and "month" in error["message"]
        assert create("0 0 29 2 *").status_code == 201  # leap days do come
