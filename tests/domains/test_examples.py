"""Synthetic example generators: conventional column names, labelled synthetic, and the planted shifts they promise."""
import numpy as np
import pandas as pd
import pytest

from domains import expressions
from domains.examples import EXAMPLE_DOMAINS, PLANTED, make_example
from domains.loader import load_builtin

N = 4000


@pytest.fixture(scope="module", params=EXAMPLE_DOMAINS)
def planted(request):
    bench, prod = make_example(request.param, n_benchmark=N, n_production=N, random_state=11)
    return request.param, bench, prod


def _binomial_ok(share: float, expected: float, n: int) -> bool:
    return abs(share - expected) <= 4 * np.sqrt(expected * (1 - expected) / n)


def test_columns_follow_spec_naming(planted):
    domain, bench, prod = planted
    pack = load_builtin(domain)
    for frame in (bench, prod):
        assert frame.attrs["synthetic"] is True and frame.attrs["domain"] == domain
        assert {"id", "label", "prediction"} <= set(frame.columns)
        assert set(pack.context_types) <= set(frame.columns)
        assert [c for c in frame.columns if c.startswith("emb_")] == [f"emb_{j}" for j in range(8)]
        assert frame["id"].is_unique and not frame[["label", "prediction"]].isna().any().any()
        assert set(frame["label"]) <= set(pack.classes) and set(frame["prediction"]) <= set(pack.classes)
    assert not set(bench["id"]) & set(prod["id"])


def test_scores_are_consistent_with_predictions(planted):
    domain, bench, _ = planted
    pack = load_builtin(domain)
    if pack.task == "binary":
        assert bench["score"].between(0, 1).all()
        assert ((bench["score"] > 0.5) == (bench["prediction"] == pack.positive_class)).all()
    else:
        proba = bench[[f"proba_{c}" for c in pack.classes]].to_numpy()
        assert np.allclose(proba.sum(axis=1), 1, atol=1e-3)
        assert (np.asarray(pack.classes)[proba.argmax(axis=1)] == bench["prediction"].to_numpy()).all()


def test_data_meet_the_pack_declarations(planted):
    domain, bench, prod = planted
    pack = load_builtin(domain)
    for col in pack.context:
        values = pd.concat([bench[col.name], prod[col.name]])
        if col.type == "categorical":
            assert set(values.dropna()) <= set(col.values), col.name
        elif col.type == "numeric":
            assert values.min() >= col.min and values.max() <= col.max, col.name


def test_planted_weak_slice(planted):
    domain, bench, prod = planted
    plant, pack = PLANTED[domain], load_builtin(domain)
    assert pack.slice(plant.weak_slice).expression == plant.weak_expression
    for frame, share in ((bench, plant.weak_share_benchmark), (prod, plant.weak_share_production)):
        weak = expressions.evaluate(plant.weak_expression, frame).to_numpy()
        assert _binomial_ok(weak.mean(), share, len(frame))
    weak = expressions.evaluate(plant.weak_expression, prod).to_numpy()
    correct = (prod["label"] == prod["prediction"]).to_numpy()
    drop = correct[~weak].mean() - correct[weak].mean()
    assert 0.12 <= drop <= 0.30  # ~20 points (the rest also holds other planted weaknesses)


def test_planted_untested_context(planted):
    domain, bench, prod = planted
    plant = PLANTED[domain]
    assert (bench[plant.untested_column] == plant.untested_value).sum() == 0
    share = (prod[plant.untested_column] == plant.untested_value).mean()
    assert _binomial_ok(share, plant.untested_share_production, N)


def test_hidden_slice_is_weak_and_not_an_expert_slice(planted):
    domain, _, prod = planted
    plant, pack = PLANTED[domain], load_builtin(domain)
    hidden = expressions.evaluate(plant.hidden_expression, prod).to_numpy()
    correct = (prod["label"] == prod["prediction"]).to_numpy()
    assert correct[~hidden].mean() - correct[hidden].mean() >= 0.2
    for name, mask in pack.slice_masks(prod).items():
        assert not np.array_equal(mask, hidden), name


@pytest.mark.parametrize("domain", EXAMPLE_DOMAINS)
def test_no_shift_draws_both_sides_alike(domain):
    bench, prod = make_example(domain, n_benchmark=N, n_production=N, shift="none", random_state=5)
    plant = PLANTED[domain]
    assert prod.attrs["planted"] is None
    assert (prod[plant.untested_column] == plant.untested_value).sum() == 0
    weak_b = expressions.evaluate(plant.weak_expression, bench).mean()
    weak_p = expressions.evaluate(plant.weak_expression, prod).mean()
    assert _binomial_ok(weak_p, plant.weak_share_benchmark, N) and _binomial_ok(weak_b, plant.weak_share_benchmark, N)


def test_deterministic_under_seed():
    a = make_example("medical", n_benchmark=200, n_production=100, random_state=7)
    b = make_example("medical", n_benchmark=200, n_production=100, random_state=7)
    c = make_example("medical", n_benchmark=200, n_production=100, random_state=8)
    assert a[0].equals(b[0]) and a[1].equals(b[1]) and not a[0].equals(c[0])
    assert a[1].shape[0] == 100


def test_options_and_errors():
    bench, _ = make_example("deepfake", n_benchmark=50, n_production=50, n_embedding=0)
    assert not any(c.startswith("emb_") for c in bench.columns)
    with pytest.raises(ValueError, match="no example generator"):
        make_example("generic")
    with pytest.raises(ValueError, match="shift must be"):
        make_example("medical", shift="some")
