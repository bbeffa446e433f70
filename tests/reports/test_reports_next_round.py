"""The next-round plan: budget split, untested contexts first, capacities, row choice, exports."""
from __future__ import annotations

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest

import reports
from domains import PLANTED
from reports import plan_next_round, rank_limitations, to_csv, to_json, to_jsonl
from reports.result import AuditResult, NextRound
from tests.reports.conftest import load_example

MIN_SIZE = 30
WEAK = PLANTED["medical"].weak_slice  # the planted weak expert slice of the fixture


def _untested(audit):
    """The fixture's untested contexts, largest production share first, with the labels each needs."""
    ordered = sorted(audit["semantic"]["untested_contexts"], key=lambda u: -u["production_share"])
    return [u["name"] for u in ordered], {u["name"]: MIN_SIZE - u["n_benchmark"] for u in ordered}


UNTESTED, NEED = _untested(load_example())


def _plan(audit, budget, **kwargs):
    return plan_next_round(audit, rank_limitations(audit), budget=budget, min_slice_size=30, **kwargs)


def _counts(plan):
    return {a.slice: a.n_to_label for a in plan.allocations}


def _candidates(plan, n=4000, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"id": [f"p{i}" for i in range(n)], "uncertainty": rng.random(n),
                          "prediction": rng.choice(["benign", "malignant"], n)})
    for a in plan.allocations:
        frame[a.slice] = rng.random(n) < max(a.production_share or 0.0, 0.02)
    return frame


@pytest.mark.parametrize("budget", [0, 1, 7, 56, 57, 500, 3001])
def test_budget_split_sums_to_budget(audit, budget):
    plan = _plan(audit, budget)
    assert sum(_counts(plan).values()) == plan.n_allocated == budget
    assert plan.n_unallocated == 0 and all(a.n_to_label >= 0 for a in plan.allocations)


def test_untested_contexts_first_up_to_min_size_by_production_share(audit):
    planted = PLANTED["medical"]
    assert len(UNTESTED) >= 2 and UNTESTED[0] == f'{planted.untested_column} == "{planted.untested_value}"'
    plan = _plan(audit, 10)
    assert [a.slice for a in plan.allocations[:len(UNTESTED)]] == UNTESTED
    assert {a.kind for a in plan.allocations[:len(UNTESTED)]} == {"untested_context"}
    small = _counts(_plan(audit, NEED[UNTESTED[0]] - 10))  # less than the first one needs: all of it there
    assert small[UNTESTED[0]] == NEED[UNTESTED[0]] - 10 and sum(small.values()) == NEED[UNTESTED[0]] - 10
    budget = sum(NEED.values())  # exactly what they need to reach min_slice_size benchmark rows: nothing else
    exact = _counts(_plan(audit, budget))
    assert {name: exact[name] for name in UNTESTED} == NEED and sum(exact.values()) == budget
    larger = _counts(_plan(audit, 500))  # each still gets its need; as a slice it may get more in the split
    assert all(larger[name] >= NEED[name] for name in UNTESTED)


def test_rest_follows_prevalence_times_gap_and_ci_width(audit):
    budget = 200
    plan = _plan(audit, budget)
    # after the untested contexts' needs the rest is split over the slices whose gap is a claim, by
    # weight; no capacity binds at this budget
    assert all(a.n_to_label < a.n_production for a in plan.allocations)
    quota = budget - sum(NEED.values())
    weighted = [a for a in plan.allocations if a.weight > 0]
    total = sum(a.weight for a in weighted)
    for a in weighted:  # largest remainder: every count is within one label of its exact quota
        split = a.n_to_label - NEED.get(a.slice, 0)
        assert abs(split - quota * a.weight / total) < 1, a
    slices = [a for a in plan.allocations if a.kind == "slice"]
    by_weight = sorted(slices, key=lambda a: a.weight)
    assert [a.n_to_label for a in by_weight] == sorted(a.n_to_label for a in by_weight)
    assert max(slices, key=lambda a: a.n_to_label).slice == WEAK
    for a in weighted:  # weight = production share × (gap + CI width / 2)
        assert a.weight == pytest.approx(a.production_share * (a.gap + a.ci_width / 2), abs=1e-6)


def test_slices_without_a_credible_gap_get_nothing(audit):
    """Labels go to claims: a slice whose gap is zero, negative or not significant (and that is no
    limitation) is not in the split, however common it is in production."""
    plan = _plan(audit, 3001)
    claimed = {s["name"] for s in audit["slices"] if (s.get("gap") or 0) > 0
               and s.get("gap_p_value_adjusted") is not None and s["gap_p_value_adjusted"] < 0.05}
    claimed |= {lim.slice for lim in rank_limitations(audit) if lim.slice is not None}
    for a in plan.allocations:
        if a.kind == "slice":
            assert a.slice in claimed and a.gap > 0, a
    not_claimed = {s["name"] for s in audit["slices"]} - claimed
    assert not_claimed & {"older_adults", "rulers", "smartphone"}  # common, gap within sampling error
    assert not any(a.slice in not_claimed and a.n_to_label for a in plan.allocations)
    assert all(a.key and a.reason for a in plan.allocations)
    by_key = {lim.key: lim for lim in rank_limitations(audit)}
    assert all(a.key in by_key for a in plan.allocations if a.kind != "production_sample")


def test_untested_contexts_follow_the_ranking_and_need_production_rows():
    """Untested contexts in the rank of their limitations; one with fewer production rows than
    ``min_slice_size`` gets nothing on its own (many one-row clinics), a pooled group of them does."""
    from reports.result import LimitationRecord

    untested = [{"name": f"clinic == \"c{i}\"", "kind": "unseen_value", "definition": f"clinic == \"c{i}\"",
                 "n_benchmark": 0, "n_production": 1, "production_share": 0.0001} for i in range(80)]
    untested += [{"name": "site == \"e\"", "kind": "unseen_value", "definition": "site == \"e\"", "n_benchmark": 0,
                  "n_production": 900, "production_share": 0.09},
                 {"name": "new values of clinic", "kind": "pooled_values",
                  "definition": "clinic in [\"c0\", \"c1\"]", "n_benchmark": 0,
                  "n_production": 80, "production_share": 0.008},
                 {"name": "device == \"x\"", "kind": "rare_value", "definition": "device == \"x\"", "n_benchmark": 5,
                  "n_production": 2000, "production_share": 0.2}]
    lims = [LimitationRecord(rank=1, kind="untested_context", slice="site == \"e\"", title="t", statement="s.",
                             score=0.1, severity="high", key='untested_context:site == "e"', definition='site == "e"')]
    plan = plan_next_round({"semantic": {"untested_contexts": untested}, "production": {"n_rows": 10_000}}, lims,
                           budget=500, min_slice_size=30)
    counts = _counts(plan)
    assert [a.slice for a in plan.allocations[:3]] == ['site == "e"', 'device == "x"', "new values of clinic"]
    assert counts['site == "e"'] == 30 and counts['device == "x"'] == 25 and counts["new values of clinic"] == 30
    assert not any(name.startswith("clinic ==") for name in counts)
    assert plan.allocations[0].key == 'untested_context:site == "e"' and "limitation #1" in plan.allocations[0].reason
    assert counts["production sample"] == 500 - 85 and plan.n_allocated == 500
    assert any("80 untested" in note for note in plan.notes)


def test_capacity_limits_are_respected_and_excess_is_resplit(audit):
    plan = _plan(audit, 3001)
    for a in plan.allocations:
        assert a.n_production is None or a.n_to_label <= a.n_production
    full = [a for a in plan.allocations if a.n_to_label == a.n_production]
    assert _counts(plan)[WEAK] == next(s["n_production"] for s in audit["slices"] if s["name"] == WEAK)  # all its rows
    assert len(full) < len(plan.allocations) and plan.n_allocated == 3001  # the excess went to the others
    assert sum(a.n_production for a in plan.allocations) > 3001


def test_unplaceable_budget_is_reported(audit):
    plan = _plan(audit, 50_000)
    assert plan.n_allocated + plan.n_unallocated == 50_000 and plan.n_unallocated > 0
    assert any("could not be placed" in note for note in plan.notes)


def test_under_tested_slice_is_topped_up_first():
    audit = {"slices": [
        {"name": "rare", "n_benchmark": 10, "n_production": 500, "production_share": 0.05, "gap": 0.0,
         "benchmark_ci": [0.3, 0.9]},
        {"name": "common", "n_benchmark": 900, "n_production": 5000, "production_share": 0.5, "gap": 0.1,
         "benchmark_ci": [0.7, 0.8], "gap_p_value_adjusted": 0.001}]}
    plan = plan_next_round(audit, [], budget=20, min_slice_size=30)
    assert _counts(plan) == {"rare": 20, "common": 0}
    assert plan.allocations[0].kind == "untested_context"
    assert sum(_counts(plan_next_round(audit, [], budget=100, min_slice_size=30)).values()) == 100


def test_without_any_slice_the_budget_goes_to_a_production_sample():
    plan = plan_next_round({"production": {"n_rows": 1000}}, [], budget=40, min_slice_size=30)
    assert [(a.kind, a.n_to_label) for a in plan.allocations] == [("production_sample", 40)]


@pytest.mark.parametrize("budget, min_size", [(-1, 30), (1.5, 30), (True, 30), (10, 0)])
def test_rejects_bad_budget_or_min_size(audit, budget, min_size):
    with pytest.raises(ValueError):
        plan_next_round(audit, [], budget=budget, min_slice_size=min_size)


def test_candidates_rows_fill_budget_once_each_and_belong_to_their_slice(audit):
    candidates = _candidates(_plan(audit, 500))
    plan = _plan(audit, 500, candidates=candidates)
    assert len(plan.rows) == 500 and len({r.id for r in plan.rows}) == 500
    indexed = candidates.set_index("id")
    for r in plan.rows:
        assert indexed.at[r.id, r.slice] and r.slice in r.tags
    assert [r.rank for r in plan.rows] == list(range(1, 501))
    assert all(a.n_selected == a.n_to_label for a in plan.allocations)


def test_rows_within_a_slice_alternate_over_predictions_most_uncertain_first(audit):
    candidates = _candidates(_plan(audit, 300))
    plan = _plan(audit, 300, candidates=candidates)
    rows = [r for r in plan.rows if r.slice == WEAK]
    groups = [r.group for r in rows]
    assert set(groups[:2]) == {"benign", "malignant"}
    for g in ("benign", "malignant"):
        u = [r.uncertainty for r in rows if r.group == g]
        assert u == sorted(u, reverse=True)
    pool = candidates[candidates[WEAK]]
    top_two_per_class = pool.sort_values("uncertainty", ascending=False).groupby("prediction").head(2)
    assert set(top_two_per_class["id"]) <= {r.id for r in rows} | set(
        r.id for r in plan.rows if r.slice in UNTESTED)


def test_missing_candidate_column_is_noted_and_budget_moves_on(audit):
    candidates = _candidates(_plan(audit, 200)).drop(columns=[UNTESTED[0]])
    plan = _plan(audit, 200, candidates=candidates)
    assert _counts(plan)[UNTESTED[0]] == 0 and any("No candidate column" in n for n in plan.notes)
    assert len(plan.rows) == 200


@pytest.mark.parametrize("bad", [pd.DataFrame({"id": [1, 1], "uncertainty": [0.1, 0.2]}),
                                 pd.DataFrame({"uncertainty": [0.1]}), pd.DataFrame({"id": [1]})])
def test_rejects_bad_candidates(audit, bad):
    with pytest.raises(ValueError):
        _plan(audit, 10, candidates=bad)


def test_plan_is_deterministic_frozen_and_json_ready(audit):
    candidates = _candidates(_plan(audit, 100))
    a, b = _plan(audit, 100, candidates=candidates), _plan(audit, 100, candidates=candidates)
    assert a == b and isinstance(a, NextRound)
    with pytest.raises(ValueError):  # frozen
        a.budget = 3
    assert json.loads(to_json(a))["n_allocated"] == 100


def test_the_plan_is_the_type_the_result_stores(audit):
    """One plan type: what the planner returns is the AuditResult's ``next_round``, unchanged by storing."""
    plan = _plan(audit, 100, candidates=_candidates(_plan(audit, 100)))
    stored = AuditResult.model_validate_json(json.dumps({**audit, "next_round": plan.to_dict()})).next_round
    assert stored == plan and stored.rows and stored.rows[0].tags


@pytest.mark.parametrize("old, new", [("NextRoundPlan", "NextRound"), ("SliceAllocation", "Allocation"),
                                      ("Limitation", "LimitationRecord")])
def test_former_plan_and_limitation_names_warn_and_give_the_one_type(old, new):
    with pytest.warns(DeprecationWarning, match=new):
        assert getattr(reports, old) is getattr(reports, new)


def test_the_records_module_names_one_limitation_type():
    """reports.records exported a second, silent name for the limitation type."""
    import reports.records

    assert "Limitation" not in reports.records.__all__
    with pytest.warns(DeprecationWarning, match="LimitationRecord"):
        assert reports.records.Limitation is reports.LimitationRecord


def test_csv_export_rows_and_allocations(audit):
    plan = _plan(audit, 120, candidates=_candidates(_plan(audit, 120)))
    rows = list(csv.DictReader(io.StringIO(to_csv(plan))))
    assert len(rows) == 120 and list(rows[0]) == ["rank", "id", "slice", "uncertainty", "group", "tags", "image"]
    allocations = list(csv.DictReader(io.StringIO(to_csv(_plan(audit, 120)))))
    assert sum(int(r["n_to_label"]) for r in allocations) == 120
    with pytest.raises(ValueError):
        to_csv(plan, what="everything")


def test_csv_neutralises_spreadsheet_formulas():
    audit = {"slices": [{"name": "=HYPERLINK(\"http://x\")", "production_share": 0.5, "gap": 0.1,
                         "benchmark_ci": [0.1, 0.2], "n_production": 100, "gap_p_value_adjusted": 0.01}]}
    text = to_csv(plan_next_round(audit, [], budget=5, min_slice_size=1))
    assert "'=HYPERLINK" in text and "\n=HYPERLINK" not in text and ",=HYPERLINK" not in text


def test_jsonl_is_dynabench_style(audit):
    plan = _plan(audit, 60, candidates=_candidates(_plan(audit, 60)))
    lines = to_jsonl(plan).splitlines()
    assert len(lines) == 60
    for line in lines:
        record = json.loads(line)
        assert list(record) == ["uid", "context", "tags", "metadata"]
        assert isinstance(record["uid"], str) and record["context"] in record["tags"]
    briefs = [json.loads(line) for line in to_jsonl(_plan(audit, 60)).splitlines()]
    assert sum(b["metadata"]["n_to_label"] for b in briefs) == 60


def test_csv_cells_carry_no_float_noise():
    """The plan's CSV carried float noise (0.49429999999999996)."""
    from reports.exports import _cell

    assert _cell(0.49429999999999996) == "0.4943" and _cell(1 / 3) == "0.333333" and _cell(12) == 12
