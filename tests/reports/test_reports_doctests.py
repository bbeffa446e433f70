"""The examples in the reports modules' docstrings run and hold."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["reports.formatting", "reports.limitations", "reports.next_round", "reports.selection", "reports.markdown",
           "reports.findings_estimates", "reports.derived_note", "reports.distribution_charts"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
