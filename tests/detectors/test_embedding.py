"""EmbeddingShiftDetector: MMD embedding shift, novel regions and their context descriptions."""
import doctest
import json

import numpy as np
import pandas as pd
import pytest

from detectors import (
    DetectorInputError,
    EmbeddingShiftDetector,
    NotFittedError,
    embedding as embedding_module,
    embedding_matrix,
)

FAST = dict(n_permutations=99, max_samples=300, n_clusters=6)


def test_doctests():
    assert doctest.testmod(embedding_module).failed == 0


def _novel_data(rng, n=800, share=0.1):
    bench = rng.normal(size=(n, 5))
    new = rng.random(n) < share
    prod = np.where(new[:, None], rng.normal(5, 0.5, (n, 5)), rng.normal(size=(n, 5)))
    context = pd.DataFrame({"source": np.where(new, "cctv", rng.choice(["web", "lab"], n)),
                            "size": np.where(new, rng.normal(20, 2, n), rng.normal(100, 20, n))})
    return bench, prod, context, new


def test_novel_region_found_and_described():
    rng = np.random.default_rng(0)
    bench, prod, context, new = _novel_data(rng)
    res = EmbeddingShiftDetector(**FAST).fit(bench).test(prod, context=context)
    assert res.is_shift and res.test.kind == "embedding" and res.test.drifted
    assert len(res.novel_regions) == 1
    region = res.novel_regions[0]
    assert region.n_production == pytest.approx(new.sum(), abs=3) and region.n_benchmark == 0
    assert region.novel_fraction > 0.9 and region.test.kind == "embedding_region"
    assert region.contexts[0].condition == 'source == "cctv"' and region.contexts[0].share_in_region == 1.0
    assert any(c.condition.startswith("size <") for c in region.contexts)
    json.dumps(res.to_dict())


def test_frames_with_embedding_columns_or_list_column():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(50, 3))
    frame = pd.DataFrame({"emb_1": x[:, 1], "emb_0": x[:, 0], "emb_2": x[:, 2], "other": 1})
    assert np.array_equal(embedding_matrix(frame), x)
    assert np.array_equal(embedding_matrix(pd.DataFrame({"embedding": list(x)})), x)
    with pytest.raises(DetectorInputError, match="no embedding columns"):
        embedding_matrix(pd.DataFrame({"a": [1]}))
    with pytest.raises(DetectorInputError, match="NaN"):
        embedding_matrix(np.array([[np.nan]]))


def test_errors():
    rng = np.random.default_rng(2)
    with pytest.raises(NotFittedError):
        EmbeddingShiftDetector().test(rng.normal(size=(10, 2)))
    det = EmbeddingShiftDetector(**FAST).fit(rng.normal(size=(100, 3)))
    with pytest.raises(DetectorInputError, match="have 4 dimensions, benchmark 3"):
        det.test(rng.normal(size=(100, 4)))
    with pytest.raises(DetectorInputError, match="one row per production"):
        det.test(rng.normal(size=(100, 3)), context=pd.DataFrame({"a": [1]}))


@pytest.mark.slow
def test_no_false_novel_regions_under_no_shift():
    rng = np.random.default_rng(3)
    runs, alarms, region_alarms = 30, 0, 0
    for r in range(runs):
        bench, prod = rng.normal(size=(400, 4)), rng.normal(size=(300, 4))
        detector = EmbeddingShiftDetector(n_permutations=49, max_samples=200, n_clusters=6, random_state=r)
        res = detector.fit(bench).test(prod)
        alarms += res.is_shift
        region_alarms += any(t.p_value < 0.05 for t in res.tests[1:])
    assert alarms / runs <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)
    # raw (uncorrected) one-sided region tests: at most ~ alpha per test, 6 per run
    assert region_alarms / runs <= 1 - 0.95 ** 6 + 0.15
