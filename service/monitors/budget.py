"""One false-alarm budget per monitor, for its whole life.

The choice (documented in README.md and benchmarks/RESULTS.md):

* Half of the monitor's ``alpha`` goes to the drift audits by **alpha-spending**: the k-th run
  that tests anything is an ordinary audit run at ``alpha_k = (alpha/2) * 6 / (pi^2 k^2)``. The
  series sums to ``alpha/2``, so by the union bound the probability that any run ever reports a
  test-based finding while nothing has changed is at most ``alpha/2``, however many runs there
  are. The cost is power late in life: run 10 tests at about 1/100 of run 1's level.
* The other half goes to **harm tracking** (Podkopaev & Ramdas 2022): with production labels,
  the primary metric of the whole set and of each expert slice is tracked cumulatively with an
  anytime-valid confidence sequence (Robbins' beta-binomial mixture, valid at every run at once
  by Ville's inequality), and harm is declared when production's upper bound falls below the
  benchmark's lower bound by more than a tolerance. Its half is split evenly (Bonferroni) over
  the benchmark bound and the production sequence of every tracked slice.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

SPENDING = "alpha-spending alpha_k = (alpha/2)*6/(pi^2 k^2) for drift audits; anytime-valid " \
           "beta-binomial confidence sequences for harm (alpha/2, Bonferroni over slices)"
# Metrics that are a proportion of rows, so ``value * n`` counts successes (harm can be tracked).
PROPORTIONS = {"accuracy", "sensitivity", "recall", "tpr", "specificity", "tnr", "precision", "ppv", "npv"}


def run_alpha(alpha: float, k: int) -> float:
    """The significance level of the ``k``-th tested run (1-based) of a monitor with budget ``alpha``."""
    if k < 1:
        raise ValueError("runs are numbered from 1")
    return (alpha / 2.0) * 6.0 / (math.pi ** 2 * k * k)


def spent(alpha: float, n_runs: int) -> float:
    """How much of ``alpha`` the first ``n_runs`` tested runs have spent (the drift half only)."""
    return sum(run_alpha(alpha, k) for k in range(1, n_runs + 1))


def _log_mixture(successes: float, n: float, p: float, a: float = 0.5, b: float = 0.5) -> float:
    """log of Robbins' beta-binomial mixture martingale at ``p`` (Beta(a, b) mixing prior)."""
    failures = n - successes
    log_beta = (math.lgamma(a + successes) + math.lgamma(b + failures) - math.lgamma(a + b + n)
                - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)))
    return log_beta - successes * math.log(p) - failures * math.log1p(-p)


def confidence_sequence(successes: float, n: float, alpha: float) -> tuple[float, float]:
    """Anytime-valid ``1 - alpha`` bounds on a Bernoulli mean after ``successes`` in ``n`` trials.

    ``{p : M_n(p) < 1/alpha}``: the set is an interval because the log mixture is convex in p.
    """
    if n <= 0:
        return 0.0, 1.0
    threshold = math.log(1.0 / alpha)
    centre = min(max(successes / n, 1e-12), 1 - 1e-12)

    def edge(lo: float, hi: float, inside_at_lo: bool) -> float:
        for _ in range(60):  # bisection to ~1e-18: far below any reported precision
            mid = (lo + hi) / 2
            inside = _log_mixture(successes, n, mid) < threshold
            if inside == inside_at_lo:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    low = 0.0 if _log_mixture(successes, n, 1e-12) < threshold else edge(centre, 1e-12, True)
    high = 1.0 if _log_mixture(successes, n, 1 - 1e-12) < threshold else edge(centre, 1 - 1e-12, True)
    return low, high


@dataclass(frozen=True)
class HarmCheck:
    """One slice's harm test after a run: cumulative production counts against the benchmark."""

    slice: str
    metric: str
    benchmark_value: float
    benchmark_low: float
    production_value: float
    production_high: float
    n_production: int
    tolerance: float
    harmful: bool
    labelled: bool = True

    @property
    def key(self) -> str:
        return f"harm:{self.slice}"

    def statement(self) -> str:
        where = "overall" if self.slice == "overall" else f"on slice {self.slice}"
        how = ("cumulative production labels, anytime-valid bound" if self.labelled else
               "ESTIMATED WITHOUT LABELS from the model's confidence, 95 % interval of this run")
        return (f"Harm {where}: production {self.metric} is {self.production_value:.3f} (upper bound "
                f"{self.production_high:.3f}, n={self.n_production:,}; {how}) against {self.benchmark_value:.3f} "
                f"on the benchmark (lower bound {self.benchmark_low:.3f}), worse by more than the tolerance "
                f"{self.tolerance:.3f}.")


def track_harm(state: dict, result: dict, *, alpha: float, tolerance: float) -> tuple[dict, list[HarmCheck]]:
    """Add this run's labelled counts to ``state`` and test every tracked slice for harm.

    ``state`` maps slice name to ``{"s", "n", "bs", "bn"}`` (production successes and trials,
    benchmark successes and trials); the slice set is fixed by the first labelled run so that
    the Bonferroni split of the harm budget never changes.
    """
    overall = result.get("overall") or {}
    metric = str(overall.get("metric") or "")
    if metric not in PROPORTIONS or overall.get("production_value") is None:
        return state, []
    counts = {"overall": (overall.get("benchmark_value"), overall.get("n"), overall.get("production_value"),
                          overall.get("n_production"))}
    for s in result.get("slices") or []:
        if s.get("source") == "expert":
            counts[s["name"]] = (s.get("benchmark_value"), s.get("metric_n_benchmark"), s.get("production_value"),
                                 s.get("metric_n_production"))
    state = {k: dict(v) for k, v in (state or {}).items()} or {
        name: {"s": 0.0, "n": 0, "bs": round((bv or 0) * (bn or 0)), "bn": int(bn or 0)}
        for name, (bv, bn, _, _) in counts.items() if bv is not None and bn}
    per_bound = alpha / 2.0 / (2 * max(len(state), 1))
    checks = []
    for name, slot in state.items():
        _, _, pv, pn = counts.get(name, (None, None, None, None))
        if pv is not None and pn:
            slot["s"] += round(pv * pn)
            slot["n"] += int(pn)
        if slot["n"] == 0 or slot["bn"] == 0:
            continue
        b_low, _ = confidence_sequence(slot["bs"], slot["bn"], per_bound)
        _, p_high = confidence_sequence(slot["s"], slot["n"], per_bound)
        checks.append(HarmCheck(slice=name, metric=metric, benchmark_value=slot["bs"] / slot["bn"],
                                benchmark_low=b_low, production_value=slot["s"] / slot["n"], production_high=p_high,
                                n_production=int(slot["n"]), tolerance=tolerance,
                                harmful=p_high < b_low - tolerance))
    return state, checks


def estimated_harm(result: dict, *, tolerance: float) -> list[HarmCheck]:
    """Without production labels: the label-free estimate stands in (and the statement says so)."""
    if (result.get("production") or {}).get("labelled"):
        return []
    block = (result.get("label") or {}).get("estimated_performance") or {}
    overall = result.get("overall") or {}
    bench, b_ci = overall.get("benchmark_value"), overall.get("benchmark_ci") or [None, None]
    for method in (block.get("methods") or {}).values():
        if method.get("status") == "ok" and method.get("ci_high") is not None and bench is not None:
            b_low = b_ci[0] if b_ci[0] is not None else bench
            return [HarmCheck(slice="overall", metric=str(method.get("metric")), benchmark_value=bench,
                              benchmark_low=b_low, production_value=method["estimate"],
                              production_high=method["ci_high"], n_production=int(method.get("n_production") or 0),
                              tolerance=tolerance, harmful=method["ci_high"] < b_low - tolerance, labelled=False)]
    return []
