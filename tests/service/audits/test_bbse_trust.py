"""BBSE is not trusted where production holds a population the benchmark lacks.

Real rows (``DAAG/nassCDS``, see :mod:`tests.service.audits.nass_worlds`); the change is SYNTHETIC: the
benchmark keeps only occupants under 65, production (unlabelled) has every age. The age column itself
is not given to the audit (only the ``age_group`` context), so no covariate test sees the new
population; before this rule the BBSE estimate (dead 4 % → 8 %, truth 4.5 %) was marked reliable
and led the verdict as "the class mix has changed".
"""
from __future__ import annotations

import pytest

from tests.service.audits import nass_worlds


@pytest.fixture(scope="module")
def result():
    bench, pool = nass_worlds.split(1)
    bench = bench[bench["age"] < 65].drop(columns=["age"]).reset_index(drop=True)
    return nass_worlds.audit(bench, pool.drop(columns=["label", "age"]))


@pytest.mark.slow
def test_the_estimate_is_flagged_with_the_population_as_reason(result):
    label = result["label"]
    assert label["decided_by"] == "bbse" and label["reliable"] is False
    assert 'age_group == "65+"' in label["reliability_reason"] and "of production" in label["reliability_reason"]
    assert label["is_shift"] is False


@pytest.mark.slow
def test_no_label_shift_claim_or_headline_rests_on_it(result):
    assert not [lim for lim in result["limitations"] if lim["kind"] == "label_shift"]
    assert "class mix" not in result["verdict"]["summary"]
    assert result["limitations"][0]["kind"] == "untested_context"
    assert any(n["part"] == "label shift (BBSE)" and "not stated as a limitation" in n["reason"]
               for n in result["notes"])


def test_without_a_new_population_the_estimate_stays_trusted():
    """Same real table, production resampled by class only (dead 5 % → 12 %): no population is
    missing, so BBSE is trusted and the class-mix change is claimed."""
    import numpy as np

    bench, pool = nass_worlds.split(2)
    rng = np.random.default_rng(2)
    dead, alive = np.flatnonzero(pool["label"] == "dead"), np.flatnonzero(pool["label"] == "alive")
    rows = np.concatenate([rng.choice(dead, 600), rng.choice(alive, 4400, replace=False)])
    result = nass_worlds.audit(bench, pool.iloc[rows].drop(columns=["label"]).reset_index(drop=True))
    assert result["label"]["reliable"] is True and result["label"]["is_shift"] is True
    assert [lim for lim in result["limitations"] if lim["kind"] == "label_shift"]
