"""Discovery pruning policy (moved from the pipeline into detectors)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from detectors import discover_weak_slices
from detectors.pruning import prune_discoveries


def data(seed=0, n=6000):
    """SYNTHETIC: errors high where site == 'c' and, inside it, higher still where age_group == 'old'."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"site": rng.choice(list("abc"), n), "age_group": rng.choice(["young", "old"], n),
                          "device": rng.choice(["x", "y"], n)})
    rate = np.where(frame.site == "c", np.where(frame.age_group == "old", 0.45, 0.12), 0.1)
    return frame, rng.random(n) < rate


def test_weak_only_because_of_a_child_is_dropped():
    frame, errors = data()
    found = discover_weak_slices(frame, errors, min_support=100)
    kept = prune_discoveries(found, reference=frame, frame=frame, errors=errors, reported=[], min_slice_size=100)
    names = [k.definition for k in kept]
    assert any("site" in n and "age_group" in n for n in names)
    assert 'site == "c"' not in names  # weak only because of its old-age part


def test_slice_covered_by_a_reported_one_and_rare_benchmark_values_are_dropped():
    frame, errors = data(1)
    found = discover_weak_slices(frame, errors, min_support=100)
    everything = prune_discoveries(found, reference=frame, frame=frame, errors=errors, reported=[], min_slice_size=100)
    assert everything
    first = everything[0].mask(frame)
    # the same rows already reported (an expert slice): no news
    again = prune_discoveries(found, reference=frame, frame=frame, errors=errors, reported=[first],
                              min_slice_size=100)
    assert all(not np.array_equal(k.mask(frame), first) for k in again)
    # inside all rows but credibly worse than them: kept
    kept = prune_discoveries(found, reference=frame, frame=frame, errors=errors,
                             reported=[np.ones(len(frame), bool)], min_slice_size=100)
    assert [k.definition for k in kept] == [k.definition for k in everything]
    # the benchmark lacks every value: nothing can be evaluated there
    tiny = frame.iloc[:50]
    assert prune_discoveries(found, reference=tiny, frame=frame, errors=errors, reported=[], min_slice_size=100) == []
    assert len(prune_discoveries(found, reference=frame, frame=frame, errors=errors, reported=[],
                                 min_slice_size=100, limit=1)) <= 1
