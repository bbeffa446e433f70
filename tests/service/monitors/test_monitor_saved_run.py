"""A service monitor run killed right after its decisions were committed reads finished, not
interrupted, and the monitor goes on with the decisions of one never killed. All data SYNTHETIC
(frames of monitor_support: a 20-point accuracy drop and a 0.5 sd shift of x1 from the third batch)."""
from __future__ import annotations

import shutil

import pytest

from service.errors import Conflict
from tests.service.monitor_support import CHANGING_BATCHES, twin_service_monitors, write_batch

KILLED = 2  # the run killed after its commit: the first changed batch, so it opens alerts


def _opened_by_run(store, monitor_id):
    """The alert keys each succeeded run opened, oldest run first."""
    runs = sorted((r for r in store.runs(monitor_id) if r.status == "succeeded"), key=lambda r: r.created_at)
    alerts = store.alerts(monitor_id=monitor_id)
    return [sorted(a.key for a in alerts if a.opened_run_id == run.id) for run in runs]


@pytest.mark.slow
def test_a_run_killed_after_its_commit_reads_finished_and_the_monitor_goes_on(tmp_path, monkeypatch):
    source = tmp_path / "source"
    source.mkdir()
    for i in range(len(CHANGING_BATCHES)):
        write_batch(source, i)
    with twin_service_monitors(tmp_path, monkeypatch) as (client, ids, roots):
        service = client.app.state.monitors
        store = service.store
        real_save, saves = store.save_run, []

        def dies_after_the_commit(monitor_id, run_id, **kwargs):
            real_save(monitor_id, run_id, **kwargs)
            if monitor_id == ids["killed"]:
                saves.append(run_id)
                if len(saves) == KILLED + 1:  # committed; the process dies before anything else
                    raise KeyboardInterrupt

        monkeypatch.setattr(store, "save_run", dies_after_the_commit)
        for i in range(len(CHANGING_BATCHES)):
            for name, monitor in ids.items():
                shutil.copy(source / f"batch{i}.csv", roots / name / f"batch{i}.csv")
                run, done = service.run_now(monitor)
                if name == "killed" and i == KILLED:
                    with pytest.raises(KeyboardInterrupt):
                        done.result(timeout=120)
                    # what a restarted service and a live instance's recovery do with the killed run
                    store.interrupt_own()
                    store.recover(0.0)
                    killed_run = store.get_run(run.id)
                    after, done = service.run_now(monitor)  # its rows were taken: nothing new
                    done.result(timeout=120)
                    assert store.get_run(after.id).status == "no_new_data"
                    continue
                done.result(timeout=120)
                assert store.get_run(run.id).status == "succeeded"
        straight, killed = store.get(ids["straight"]), store.get(ids["killed"])
        opened = {name: _opened_by_run(store, ids[name]) for name in ids}
        killed_alerts = [a.id for a in store.alerts(monitor_id=ids["killed"]) if a.opened_run_id == killed_run.id]
    assert killed_run.status == "succeeded" and killed_run.error is None and killed_run.finished_at is not None
    assert killed_alerts and sorted(killed_run.alert_ids) == sorted(killed_alerts)
    assert killed_run.n_rows == 400 and killed_run.summary
    assert opened["straight"] == opened["killed"] and len(opened["killed"]) == len(CHANGING_BATCHES)
    assert killed.detector_state == straight.detector_state
    assert killed.n_tested == straight.n_tested == len(CHANGING_BATCHES)


@pytest.fixture
def store(store_and_benchmark):
    store, bench_id = store_and_benchmark
    monitor = store.create(name="m", benchmark_id=bench_id, domain="generic", source={"type": "directory"},
                           schedule={"interval_seconds": 60}, options={}, alerts={}, alpha=0.05)
    return store, monitor.id


def test_a_run_whose_decisions_were_saved_ends_succeeded_and_a_run_ended_first_saves_nothing(store):
    """Shutdown (interrupt_own) and recovery end a run whose process stopped after its save as
    succeeded, one stopped before it as interrupted; a process that outlived its lease (its run failed
    as interrupted meanwhile) must not store decisions another process may be remaking."""
    store, monitor = store
    saved, unsaved, recovered = (store.create_run(monitor, "manual") for _ in range(3))
    for run, owner in ((saved, "p1"), (unsaved, "p1"), (recovered, "p2")):
        assert store.claim_run(run.id, owner)
    store.save_run(monitor, saved.id, files=[("/d/a.csv", "1" * 64)], monitor={"n_tested": 1},
                   run={"n_rows": 10, "audit_id": "au_saved", "alpha": 0.01, "alert_ids": ["al_1"]}, alerts=[])
    store.save_run(monitor, recovered.id, files=[("/d/c.csv", "3" * 64)], monitor={"n_tested": 2},
                   run={"n_rows": 30, "audit_id": "au_recovered", "alpha": 0.01, "alert_ids": []}, alerts=[])
    assert store.get_run(saved.id).status == "running"  # saved; its process still sends its webhooks
    assert store.interrupt_own("p1") == 1
    assert store.recover(60.0) == 0  # the monitor holds no lease: p2's run is ended, as succeeded
    for run in (saved, recovered):
        row = store.get_run(run.id)
        assert row.status == "succeeded" and row.error is None and row.finished_at is not None
    assert store.get_run(saved.id).alert_ids == ["al_1"]
    with pytest.raises(Conflict) as refused:
        store.save_run(monitor, unsaved.id, files=[("/d/b.csv", "2" * 64)], monitor={"n_tested": 3},
                       run={"n_rows": 20, "audit_id": "au_late", "alpha": 0.01, "alert_ids": []}, alerts=[])
    assert refused.value.code == "run_ended" and not store.run_open(unsaved.id)
    late = store.get_run(unsaved.id)
    assert late.status == "failed" and late.error["code"] == "interrupted" and late.n_rows is None
    assert store.get(monitor).n_tested == 2 and ("/d/b.csv", "2" * 64) not in store.taken_files(monitor)
