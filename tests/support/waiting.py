"""Waiting for something to happen in a test: poll with a deadline instead of sleeping a fixed time.

A fixed sleep is either too short on a loaded machine (the test fails for no fault) or longer than
needed everywhere else (the suite crawls); a poll returns as soon as the condition holds and fails
with a message saying what never happened.
"""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout_s: float = 60.0, interval_s: float = 0.1,
               what: str | None = None) -> T:
    """Call ``predicate`` every ``interval_s`` seconds until it returns a truthy value; return it.

    Parameters
    ----------
    predicate : callable
        Called with no argument; its first truthy value ends the wait.
    timeout_s : float
        The deadline, in seconds from the call.
    interval_s : float
        The pause between two calls.
    what : str, optional
        What is awaited, for the message on timeout (default: the predicate's name).

    Raises
    ------
    TimeoutError
        When ``predicate`` stayed falsy until the deadline; the message names what was awaited,
        the deadline and the last value seen.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            name = what or getattr(predicate, "__name__", repr(predicate))
            raise TimeoutError(f"{name}: not met within {timeout_s:g} s (last value {value!r})")
        time.sleep(interval_s)
