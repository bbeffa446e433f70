"""The polling helper returns as soon as its condition holds and fails loudly when it never does."""
from __future__ import annotations

import time

import pytest

from tests.support.waiting import wait_until


def test_returns_the_first_truthy_value_without_waiting_longer():
    calls = iter([0, [], "ready", "later"])
    started = time.monotonic()
    assert wait_until(lambda: next(calls), timeout_s=10, interval_s=0.01) == "ready"
    assert time.monotonic() - started < 5  # three calls, not the deadline


def test_a_condition_that_never_holds_raises_naming_it_after_the_deadline():
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="the file to appear.*0.2 s.*None"):
        wait_until(lambda: None, timeout_s=0.2, interval_s=0.05, what="the file to appear")
    assert time.monotonic() - started >= 0.2
