"""Great Expectations results are attributed to the right expectation, whatever GE does."""
from __future__ import annotations

import pandas as pd

from service.datasets.validation import Expectation, validate


def test_results_follow_the_expectations_even_when_ge_merges_repeats():
    frame = pd.DataFrame({"a": [0.5, 2.0, 0.1], "b": [1.0, None, 3.0], "c": ["x", "y", "z"]})
    expectations = [
        Expectation("expect_column_values_to_not_be_null", "a"),
        Expectation("expect_column_values_to_be_between", "a", {"min_value": 0, "max_value": 1}),
        Expectation("expect_column_values_to_be_between", "a", {"min_value": 0, "max_value": 1, "mostly": 1.0},
                    source="domain:x"),
        Expectation("expect_column_values_to_not_be_null", "b"),
        Expectation("expect_column_values_to_be_in_set", "c", {"value_set": ["x", "y", "z"]}),
    ]
    report = validate(frame, expectations)
    outcome = {(r["expectation"], r["column"]): r["success"] for r in report["results"]}
    assert outcome == {("expect_column_values_to_not_be_null", "a"): True,
                       ("expect_column_values_to_be_between", "a"): False,
                       ("expect_column_values_to_not_be_null", "b"): False,
                       ("expect_column_values_to_be_in_set", "c"): True}
    between = next(r for r in report["results"] if r["expectation"].endswith("between"))
    assert between["partial_unexpected_list"] == [2.0] and report["success"] is False
