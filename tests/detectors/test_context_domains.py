"""End to end on every built-in domain's SYNTHETIC generator: the planted shifts are found.

For each domain: the planted weak slice shows its ~20-point drop with a gap CI that excludes
"no gap" and its 3 % -> 15 % share shift; the planted untested context is reported (as a
context value, as an embedding region and in the attribution's uncovered share); discovery
recovers the planted two-condition slice; and with ``shift="none"`` the dataset-level
context-shift verdict keeps its false-alarm rate at alpha.
"""
import numpy as np
import pytest

from detectors import (
    ContextShiftDetector,
    EmbeddingShiftDetector,
    Outcomes,
    SliceEvaluator,
    attribute_performance,
    context_cells,
    discover_weak_slices,
)
from domains import PLANTED, load_builtin, make_example

DOMAINS = tuple(PLANTED)
NO_FLOORS = {"cramers_v": 0.0, "wasserstein_normed": 0.0, "share_difference": 0.0}


def _outcomes(frame, pack):
    return Outcomes(frame["prediction"], frame["label"], frame["score"] if "score" in frame else None)


@pytest.fixture(scope="module", params=DOMAINS)
def planted(request):
    domain = request.param
    pack = load_builtin(domain)
    bench, prod = make_example(domain, n_benchmark=2000, n_production=4000, random_state=2024)
    cols = [c.name for c in pack.context]
    mb, mp = pack.slice_masks(bench), pack.slice_masks(prod)
    slices = {name: (mb[name], mp[name]) for name in mb}
    return domain, pack, bench, prod, cols, slices


def test_planted_weak_slice_is_found(planted):
    domain, pack, bench, prod, _, slices = planted
    plant = PLANTED[domain]
    ev = SliceEvaluator(metric=pack.primary_metric, positive=pack.positive_class).fit(_outcomes(bench, pack)).test(
        _outcomes(prod, pack), slices=slices, definitions={s.name: s.expression for s in pack.slices})
    weak = ev.get(plant.weak_slice)
    assert weak.definition == plant.weak_expression
    assert weak.underperforming and weak.gap_p_value_adjusted < 0.05
    assert weak.gap_ci[1] < 0  # the CI of slice - rest excludes "no gap"
    assert -0.32 <= weak.gap_vs_rest <= -0.1
    drop = ev.overall_benchmark.value - weak.production_value  # ~20 points below the benchmark's headline
    assert 0.1 <= drop <= 0.32
    assert weak.production_ci[1] < ev.overall_benchmark.ci_low
    assert weak.benchmark_share == pytest.approx(0.03, abs=0.015)
    assert weak.production_share == pytest.approx(0.15, abs=0.03)


def test_planted_share_shift_and_untested_context_are_reported(planted):
    domain, pack, bench, prod, cols, slices = planted
    plant = PLANTED[domain]
    res = ContextShiftDetector(min_slice_size=pack.min_slice_size).fit(
        bench[cols], column_types=pack.context_types).test(prod[cols], slices=slices)
    assert res.is_shift
    share = next(s for s in res.slice_shares if s.name == plant.weak_slice)
    assert share.test.drifted and share.difference_ci[0] > 0.08
    by_name = {t.name: t for t in res.contexts}
    assert by_name[plant.untested_column].drifted
    untested = {u.name: u for u in res.untested_contexts}
    key = f'{plant.untested_column} == "{plant.untested_value}"'
    assert untested[key].kind == "unseen_value" and untested[key].n_benchmark == 0
    assert untested[key].production_share == pytest.approx(plant.untested_share_production, abs=0.03)
    assert untested[key] == res.untested_contexts[0] or untested[key].production_share >= 0.05


def test_discovery_recovers_the_planted_two_condition_slice(planted):
    domain, pack, bench, prod, cols, _ = planted
    plant = PLANTED[domain]
    errors = (prod["label"] != prod["prediction"]).to_numpy()
    found = discover_weak_slices(prod[cols], errors, column_types=pack.context_types, min_support=pack.min_slice_size)
    pairs = [{(c.column, c.value) for c in s.conditions} for s in found.slices]
    assert set(plant.hidden_conditions) in pairs
    hit = found.slices[pairs.index(set(plant.hidden_conditions))]
    assert hit.source == "discovered" and hit.p_value_adjusted < 0.05 and hit.gap_ci[0] > 0
    assert hit.definition in (plant.hidden_expression,
                              " and ".join(reversed(plant.hidden_expression.split(" and "))))
    names = {s.expression for s in pack.slices}
    assert hit.definition not in names


@pytest.mark.slow
def test_untested_context_is_a_novel_embedding_region(planted):
    domain, pack, bench, prod, cols, _ = planted
    plant = PLANTED[domain]
    res = EmbeddingShiftDetector(n_permutations=99, max_samples=300, random_state=1).fit(bench).test(
        prod, context=prod[cols])
    assert res.is_shift and res.novel_regions
    top = res.novel_regions[0]
    assert top.benchmark_share < 0.01 and top.novel_fraction > 0.8
    assert top.contexts[0].condition == f'{plant.untested_column} == "{plant.untested_value}"'


def test_attribution_separates_mix_from_within_context_change(planted):
    domain, pack = planted[:2]
    plant = PLANTED[domain]
    # a larger benchmark: its 3 % weak context must be measured well enough to carry the mix effect
    bench, prod = make_example(domain, n_benchmark=8000, n_production=2000, random_state=7, n_embedding=0)
    bench = bench.assign(weak=pack.slice_masks(bench)[plant.weak_slice])
    prod = prod.assign(weak=pack.slice_masks(prod)[plant.weak_slice])
    correct_b = (bench.label == bench.prediction).to_numpy(float)
    correct_p = (prod.label == prod.prediction).to_numpy(float)
    cb, cp, labels = context_cells(bench, prod, ["weak"])
    att = attribute_performance(cb, correct_b, cp, correct_p, labels=labels)
    assert att.mix_ci[1] < 0  # more of the weak context in production: expected accuracy falls
    assert att.mix_effect == pytest.approx(-0.12 * 0.2, abs=0.015)
    assert att.total_change == pytest.approx(att.mix_effect + att.within_effect)
    assert att.total_ci[1] < 0
    # within cells, only the untested context (8-10 % of production, 15 points worse) degrades
    assert att.within_ci[0] < -plant.untested_share_production * 0.15 < att.within_ci[1]
    assert att.cells[0].cell == "weak == true" and att.cells[0].mix_contribution < 0
    cb, cp, labels = context_cells(bench, prod, [plant.untested_column])
    att = attribute_performance(cb, correct_b, cp, correct_p, labels=labels)
    assert att.uncovered_share == pytest.approx(plant.untested_share_production, abs=0.03)


@pytest.mark.slow
def test_no_shift_false_alarm_rate():
    """Dataset-level verdict with no effect floors (p-values alone) over repeated seeds."""
    alarms = runs = 0
    per_domain = 80
    for domain in DOMAINS:
        pack = load_builtin(domain)
        cols = [c.name for c in pack.context]
        for seed in range(per_domain):
            bench, prod = make_example(domain, n_benchmark=400, n_production=600, shift="none",
                                       random_state=10_000 + seed, n_embedding=0)
            mb, mp = pack.slice_masks(bench), pack.slice_masks(prod)
            res = ContextShiftDetector(effect_floors=NO_FLOORS).fit(
                bench[cols], column_types=pack.context_types).test(prod[cols], slices={k: (mb[k], mp[k]) for k in mb})
            alarms += res.is_shift
            runs += 1
    assert alarms / runs <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)
