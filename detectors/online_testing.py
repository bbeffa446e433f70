"""Tests that arrive one at a time and whose decisions never change: LORD++ online FDR control,
and the one-sided test of "the later proportion is better" it is used with.

A benchmark series tests each new round against the one before. Correcting the whole series
at once (Holm, Benjamini–Hochberg) changes the earlier rounds' decisions every time a round is
added: a gain that was significant with four rounds stops being significant with eight. An
*online* procedure instead fixes test ``t``'s level from the decisions of tests ``1 .. t-1``
alone, so adding test ``t+1`` can never change tests ``1 .. t``.

LORD++ (Ramdas, Yang, Wainwright and Jordan 2017, "Online control of the false discovery
rate with decaying memory", building on Javanmard and Montanari's LORD) starts with wealth
``w0`` and earns wealth back with each rejection; the level of test ``t`` is

    alpha_t = gamma(t) w0 + (alpha - w0) gamma(t - tau_1) + alpha * sum_{j >= 2} gamma(t - tau_j)

where ``tau_j`` is the test number of the j-th rejection and ``gamma`` is a non-increasing
sequence summing to 1. With independent p-values it controls the false discovery rate at
``alpha`` at every step. Under the global null (nothing ever improves) there is no rejection to
earn wealth, so the levels sum to at most ``w0`` and, by the union bound, the chance of *any*
false claim is at most ``w0`` = ``alpha / 2`` whatever the dependence between the tests (two
consecutive improvement tests share a round, so they are dependent).

``gamma(j) = 6 / (pi^2 j^2)`` spends most of the wealth on the first tests: benchmark series are
short (a few to a few dozen rounds), so early rounds get usable levels (0.015 for the first test
at ``alpha`` = 0.05) at the cost of small levels for long runs without a gain.

>>> out = lord_plus_plus([0.001, 0.004, 0.4, 0.3], alpha=0.05)
>>> [round(a, 4) for a in out.levels]
[0.0152, 0.019, 0.0359, 0.0102]
>>> out.rejected
(True, True, False, False)
>>> rng = np.random.default_rng(0)  # nothing improves: any false claim in 10 tests, over 2000 series
>>> any_claim = [any(lord_plus_plus(rng.uniform(size=10)).rejected) for _ in range(2000)]
>>> float(np.mean(any_claim)) <= 0.025
True
>>> gain = proportion_gain(700, 1000, 760, 1000)
>>> round(gain.difference, 2), gain.p_value < 0.002
(0.06, True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from detectors.base import Result, check_alpha, check_number, check_probabilities
from detectors.intervals import newcombe_interval

__all__ = ["OnlineDecisions", "ProportionGain", "gamma_sequence", "lord_plus_plus", "proportion_gain"]


@dataclass(frozen=True)
class OnlineDecisions(Result):
    """Levels and decisions of a sequence of tests, each level fixed by the earlier decisions.

    Attributes
    ----------
    levels : tuple of float, length m
        ``levels[t]`` is the level test ``t`` was held to (a function of ``rejected[:t]`` only).
    rejected : tuple of bool, length m
        ``p_values[t] <= levels[t]``; False for a missing p-value.
    wealth : tuple of float, length m
        Wealth left after test ``t`` (spent levels subtracted, rejection rewards added).
    alpha, w0 : float
    procedure : str
    """

    levels: tuple
    rejected: tuple
    wealth: tuple
    alpha: float
    w0: float
    procedure: str = "LORD++"


@dataclass(frozen=True)
class ProportionGain(Result):
    """``k2/n2 - k1/n1`` with Newcombe's 95 % interval and the one-sided pooled z-test p-value of
    "the second proportion is better" (higher, or lower when ``lower_is_better``)."""

    difference: float
    ci_low: float
    ci_high: float
    p_value: float


def gamma_sequence(m: int) -> np.ndarray:
    """``gamma(j) = 6 / (pi^2 j^2)`` for ``j = 1 .. m``: shape (m,), non-increasing, sums to < 1."""
    j = np.arange(1, int(m) + 1, dtype=float)
    return 6.0 / (math.pi ** 2 * j ** 2)


def lord_plus_plus(p_values: Sequence[float | None], *, alpha: float = 0.05,
                   w0: float | None = None) -> OnlineDecisions:
    """LORD++ levels and decisions for ``p_values`` in arrival order.

    Parameters
    ----------
    p_values : sequence of float or None, length m
        One p-value per test; None or NaN for a test that could not run (not rejected; its level
        is still spent, so later levels do not depend on whether it ran).
    alpha : float in (0, 1)
        Target false discovery rate.
    w0 : float in (0, alpha], optional
        Initial wealth; ``alpha / 2`` by default (half for the first tests, half earned back by
        the first rejection).

    Returns
    -------
    OnlineDecisions
    """
    check_alpha(alpha)
    w0 = alpha / 2 if w0 is None else w0
    check_number("w0", w0, minimum=0, maximum=alpha, open_low=True)
    w0 = float(w0)
    p = np.array([np.nan if v is None else float(v) for v in p_values], dtype=float)
    check_probabilities("p_values", p)
    gamma = gamma_sequence(len(p) + 1)
    levels, rejected, wealth = [], [], []
    rejections: list[int] = []  # 1-based test numbers of the rejections so far
    left = w0
    for t in range(1, len(p) + 1):
        level = gamma[t - 1] * w0
        for j, tau in enumerate(rejections):
            level += (alpha - w0 if j == 0 else alpha) * gamma[t - tau - 1]
        hit = bool(np.isfinite(p[t - 1]) and p[t - 1] <= level)
        left -= level
        if hit:
            left += alpha - w0 if not rejections else alpha
            rejections.append(t)
        levels.append(float(level))
        rejected.append(hit)
        wealth.append(float(left))
    return OnlineDecisions(tuple(levels), tuple(rejected), tuple(wealth), float(alpha), w0)


def proportion_gain(k1: int, n1: int, k2: int, n2: int, *, lower_is_better: bool = False) -> ProportionGain:
    """One-sided test that ``k2/n2`` improves on ``k1/n1`` (two independent samples).

    Parameters
    ----------
    k1, n1, k2, n2 : int
        Successes and trials of the earlier and the later sample; ``n1, n2 >= 1``.
    lower_is_better : bool
        True for an error rate: a fall is the gain.

    Returns
    -------
    ProportionGain
        ``p_value`` is 1 when both samples are all successes or all failures (no evidence).
    """
    for k_name, k, n_name, n in (("k1", k1, "n1", n1), ("k2", k2, "n2", n2)):
        check_number(n_name, n, minimum=1)
        check_number(k_name, k, minimum=0, maximum=n)
    lo, hi = newcombe_interval(k1, n1, k2, n2)
    pooled = (k1 + k2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    diff = k2 / n2 - k1 / n1
    sign = -1.0 if lower_is_better else 1.0
    p = 0.5 * math.erfc(sign * diff / se / math.sqrt(2)) if se > 0 else 1.0
    return ProportionGain(float(diff), float(lo), float(hi), float(p))
