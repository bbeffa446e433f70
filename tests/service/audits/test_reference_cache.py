"""The reference cache (cheap runs): the cache itself, its keys, and audits and monitor
runs that reuse benchmark-side fits with results identical to fitting again. All data SYNTHETIC."""
from __future__ import annotations

import json
import os
import time

import numpy as np
import pandas as pd
import pytest

from audit.pipeline.reference_cache import ReferenceCache, cache_key, frame_digest

FITTED = ("detectors.confidence_based.ConfidenceBasedEstimator", "detectors.label_shift.LabelShiftEstimator",
          "detectors.context.ContextShiftDetector", "detectors.embedding.EmbeddingShiftDetector")


# ---------------------------------------------------------------------------------------- the cache
def test_hit_miss_and_compute_once(tmp_path):
    cache = ReferenceCache(tmp_path)
    key, calls = cache_key("a"), []
    assert cache.get(key) is None and cache.misses == 1
    assert cache.get_or_compute(key, lambda: calls.append(1) or {"x": 1}) == {"x": 1}
    assert cache.get_or_compute(key, lambda: calls.append(1) or {"x": 2}) == {"x": 1}
    assert calls == [1] and cache.hits == 1
    fresh = ReferenceCache(tmp_path)  # another process: read from disk
    assert fresh.get(key) == {"x": 1} and fresh.hits == 1


def test_memory_lru_evicts_the_least_recently_used():
    cache = ReferenceCache(None, max_items=2)
    a, b, c = (cache_key(n) for n in "abc")
    cache.put(a, 1)
    cache.put(b, 2)
    assert cache.get(a) == 1  # a is now the most recent
    cache.put(c, 3)
    assert cache.get(b) is None and cache.get(a) == 1 and cache.get(c) == 3


def test_disk_keeps_at_most_max_files(tmp_path):
    cache = ReferenceCache(tmp_path, max_items=1, max_files=2)
    keys = [cache_key(i) for i in range(3)]
    for i, key in enumerate(keys):
        cache.put(key, i)
    assert len(list(tmp_path.glob("*.pkl"))) == 2 and not (tmp_path / f"{keys[0]}.pkl").exists()
    small, now = ReferenceCache(tmp_path / "bytes", max_bytes=30_000), time.time()
    for age, key in zip((300, 200, 100), keys):
        small.put(key, np.zeros(1000))  # 8 kB each, plus a header
        os.utime(tmp_path / "bytes" / f"{key}.pkl", (now - age, now - age))
    assert ReferenceCache(tmp_path / "bytes").get(keys[0]) is not None  # read from disk: now the most recent
    small.put(cache_key("big"), np.zeros(2000))  # 16 kB more: the least recently used go
    assert {p.stem for p in (tmp_path / "bytes").glob("*.pkl")} == {keys[0], cache_key("big")}


def test_a_corrupt_or_truncated_file_is_a_miss_not_an_error(tmp_path):
    cache = ReferenceCache(tmp_path)
    key = cache_key("state")
    cache.put(key, np.arange(1000))
    path = tmp_path / f"{key}.pkl"
    for broken in (b"not a pickle", path.read_bytes()[:50], b""):
        path.write_bytes(broken)
        fresh = ReferenceCache(tmp_path)
        assert fresh.get(key) is None
        assert fresh.get_or_compute(key, lambda: "recomputed") == "recomputed"
    assert ReferenceCache(tmp_path).get(key) == "recomputed"


def test_an_unwritable_value_or_folder_costs_speed_not_the_audit(tmp_path):
    cache = ReferenceCache(tmp_path / "file")
    (tmp_path / "file").write_text("a file where the folder should be")
    assert cache.get_or_compute(cache_key(1), lambda: 5) == 5  # kept in memory all the same
    lock = ReferenceCache(tmp_path / "ok")
    import threading

    assert lock.get_or_compute(cache_key(2), threading.Lock) is not None  # unpicklable
    assert not list((tmp_path / "ok").glob("*.pkl"))
    with pytest.raises(ValueError):
        lock.get("../../etc/passwd")


def test_keys_are_canonical():
    assert cache_key({"a": 1, "b": [1, 2]}) == cache_key({"b": (1, 2), "a": 1})
    assert cache_key({"a": 1}) != cache_key({"a": 2}) != cache_key("a", 1)
    frame = pd.DataFrame({"x": [1.0, 2.0], "c": ["a", "b"]})
    assert frame_digest(frame) == frame_digest(frame.copy())
    assert frame_digest(frame) != frame_digest(frame.assign(x=[1.0, 2.5]))
    assert frame_digest(frame) != frame_digest(frame.rename(columns={"x": "y"}))


# ------------------------------------------------------------------------------ the audit's keys
@pytest.fixture(scope="module")
def medical():
    from audit.roles import infer_roles
    from domains.examples import make_example
    from service.audits.local import load_pack

    pack = load_pack("medical")
    contexts = [c.name for c in pack.context]
    bench, prod = make_example("medical", n_benchmark=800, n_production=400, shift="planted", random_state=0)
    return (bench, prod, pack, infer_roles(bench.columns, context_columns=contexts),
            infer_roles(prod.columns, context_columns=contexts))


def _key(medical, *, frame=None, roles=None, pack=None, **options):
    from audit.options import AuditOptions
    from audit.pipeline import reference
    from audit.pipeline.columns import resolve_columns

    bench, _, default_pack, bench_roles, prod_roles = medical
    columns = resolve_columns(roles or bench_roles, prod_roles)
    opts = AuditOptions(**options).model_dump()
    pack = pack or default_pack
    fits = reference.for_audit(ReferenceCache(None), bench if frame is None else frame, None, columns,
                               list(pack.classes), pack, opts, opts["min_slice_size"] or pack.min_slice_size,
                               opts["alpha"])
    return fits.key


def test_the_key_changes_with_what_the_fits_depend_on(medical):
    bench, _, pack, roles, _ = medical
    base = _key(medical)
    assert _key(medical) == base
    changed = {
        "data": _key(medical, frame=bench.assign(blur_score=bench["blur_score"] + 1e-9)),
        "roles": _key(medical, roles={**roles, "blur_score": "ignore"}),
        "pack content": _key(medical, pack=pack.model_copy(update={"min_slice_size": 31})),
        "pack version": _key(medical, pack=pack.model_copy(update={"version": "2"})),
        "seed": _key(medical, seed=1),
        "correction": _key(medical, correction="holm"),
        "min_slice_size": _key(medical, min_slice_size=40),
    }
    assert all(key != base for key in changed.values()), [k for k, v in changed.items() if v == base]
    assert len(set(changed.values())) == len(changed)
    # the level and the reporting options do not reach a fit: a monitor's alpha_k must not miss
    assert _key(medical, alpha=0.001) == _key(medical, budget=10, discovery=False) == base


@pytest.mark.slow
def test_a_detector_fitted_at_one_level_tests_like_one_fitted_at_another(medical):
    """Why alpha is not in the key: at_level re-levels a cached detector, nested ones included."""
    from audit.pipeline.reference import at_level
    from detectors import ContextShiftDetector, CovariateShiftDetector, EmbeddingShiftDetector, OutputShiftDetector

    bench, prod, *_ = medical
    emb = [c for c in bench.columns if c.startswith("emb_")]
    cases = [(CovariateShiftDetector, ["lesion_diameter_mm", "image_brightness", "blur_score"], {}),
             (OutputShiftDetector, ["score"], {"classes": ["benign", "malignant"]}),
             (ContextShiftDetector, ["fitzpatrick", "body_site"], {}),
             (EmbeddingShiftDetector, emb, {"n_permutations": 99})]
    for cls, cols, kw in cases:
        loose = cls(alpha=0.2, **kw).fit(bench[cols])
        strict = cls(alpha=1e-6, **kw).fit(bench[cols])
        relevelled = at_level(loose, 1e-6)
        assert loose.alpha == 0.2  # the cached object is left alone
        assert json.dumps(relevelled.test(prod[cols]).to_dict(), default=str) == \
            json.dumps(strict.test(prod[cols]).to_dict(), default=str), cls.__name__


# --------------------------------------------------------------------- audits and monitor runs
def _spy_fits(monkeypatch) -> dict[str, int]:
    import importlib

    calls = {name: 0 for name in FITTED}
    for name in FITTED:
        module, cls_name = name.rsplit(".", 1)
        cls = getattr(importlib.import_module(module), cls_name)
        original = cls.fit

        def fit(self, *args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "fit", fit)
    return calls


def _comparable(result: dict) -> dict:
    return {k: v for k, v in json.loads(json.dumps(result)).items() if k not in ("timings", "created_at")}


@pytest.mark.slow
def test_an_audit_with_the_cache_is_identical_and_does_not_refit(medical, tmp_path, monkeypatch):
    from service.audits.local import audit_frames

    bench, prod, pack, bench_roles, prod_roles = medical
    calls = _spy_fits(monkeypatch)

    def audit(cache, alpha=0.05):
        return audit_frames(bench, prod, pack=pack, benchmark_roles=bench_roles, production_roles=prod_roles,
                            options={"alpha": alpha, "discovery": False},
                            reference_cache=cache).result_json

    plain = audit(None)
    fitted_once = dict(calls)
    assert all(fitted_once.values()), fitted_once  # every spied detector is part of this audit
    first = audit(ReferenceCache(tmp_path))
    assert calls == {k: 2 * v for k, v in fitted_once.items()}
    second = audit(ReferenceCache(tmp_path))  # a new process: from disk
    assert calls == {k: 2 * v for k, v in fitted_once.items()}, "the second run refitted"
    assert _comparable(plain) == _comparable(first) == _comparable(second)
    # a monitor's next run tests at a smaller level: still no refit, and the result of a fresh fit
    cache = ReferenceCache(tmp_path)
    assert _comparable(audit(cache, alpha=0.01)) == _comparable(audit(None, alpha=0.01))
    assert cache.misses == 0


@pytest.mark.slow
def test_monitor_runs_reuse_the_benchmark_fits(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings
    from tests.service.monitor_support import synthetic_frame, upload_benchmark, wait_run

    drop = tmp_path / "drop"
    drop.mkdir()
    settings = Settings(data_dir=tmp_path / "data", monitor_roots=[drop], monitor_min_interval_s=1)
    calls = _spy_fits(monkeypatch)
    with TestClient(create_app(settings)) as client:
        bench = upload_benchmark(client, synthetic_frame(800, 0))
        monitor = client.post("/v1/monitors", json={
            "name": "cheap", "benchmark": bench, "domain": "generic", "options": {"discovery": False},
            "source": {"type": "directory", "path": str(drop), "pattern": "*.csv"},
            "schedule": {"interval_seconds": 3600}}).json()["id"]
        fits = []
        for i in range(2):
            synthetic_frame(300, 10 + i).to_csv(drop / f"b{i}.csv", index=False)
            run = client.post(f"/v1/monitors/{monitor}/run").json()
            assert wait_run(client, monitor, run["run_id"])["status"] == "succeeded"
            fits.append(calls["detectors.confidence_based.ConfidenceBasedEstimator"])
        assert fits == [1, 1]  # fitted at the first run only
        assert list((tmp_path / "data" / "cache" / "reference").glob("*.pkl"))


@pytest.mark.slow
def test_monitor_config_runs_keep_fits_on_disk_and_the_setting_turns_it_off(tmp_path, monkeypatch):
    import yaml

    from service.cli import main
    from tests.service.monitor_support import synthetic_frame

    synthetic_frame(600, 0).to_csv(tmp_path / "bench.csv", index=False)
    (tmp_path / "in").mkdir()
    config = {"name": "cron", "benchmark": "bench.csv", "domain": "generic", "state": "state.json",
              "source": {"type": "directory", "path": "in", "pattern": "*.csv"}, "options": {"discovery": False}}
    (tmp_path / "monitor.yaml").write_text(yaml.safe_dump(config))
    calls = _spy_fits(monkeypatch)
    key = "detectors.confidence_based.ConfidenceBasedEstimator"
    counts = []
    for i, setting in enumerate(("on", "on", "off")):
        monkeypatch.setenv("CONTEXTSHIFT_REFERENCE_CACHE", setting)
        synthetic_frame(200, 20 + i).to_csv(tmp_path / "in" / f"b{i}.csv", index=False)
        assert main(["monitor", "run", "--config", str(tmp_path / "monitor.yaml")]) == 0
        counts.append(calls[key])
    assert counts == [1, 1, 2]
    assert list((tmp_path / "cache" / "reference").glob("*.pkl"))
