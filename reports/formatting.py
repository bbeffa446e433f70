"""Plain-language number formatting shared by every renderer: metrics with CIs, shares, p-values,
sample sizes, a claim's decision.

The typed AuditResult holds finite numbers or ``None``; a formatter prints ``None`` (and, for values
computed on the way, NaN or infinity) as unknown ("n/a") rather than failing.

>>> fmt_metric(0.6123, (0.52, 0.7))
'0.61 [0.52, 0.70]'
>>> fmt_share(0.183), fmt_share(0.004), fmt_p(0.00002), fmt_n(7000)
('18 %', '0.4 %', 'p < 0.001', 'n=7,000')
>>> fmt_num(-0.001), fmt_value(0.49429999999999996), fmt_value(2.0), fmt_seconds(0.476)
('0.00', '0.4943', '2', '0.476 s')
>>> fmt_mean(1998.4), fmt_mean(0.0675), fmt_mean(1548.7)
('1,998', '0.0675', '1,549')
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from detectors.metric_registry import lower_is_better  # re-exported: the one answer to "is lower better?"
from reports.result import Decision

__all__ = [
    "finite_number", "fmt_num", "fmt_metric", "fmt_ci", "fmt_share",
    "fmt_p", "fmt_n", "metric_label", "effect_label", "lower_is_better", "shorten", "capitalise",
    "fmt_value", "fmt_seconds", "no_negative_zero", "fmt_mean", "fmt_decision",
]

_METRIC_LABELS = {
    "auc": "AUC", "roc_auc": "AUC", "macro_f1": "macro-F1", "f1": "F1", "fpr": "false-positive rate",
    "fnr": "false-negative rate", "ece": "calibration error (ECE)", "balanced_accuracy": "balanced accuracy",
}
_EFFECT_LABELS = {
    "wasserstein_normed": "normed Wasserstein distance", "cramers_v": "Cramér's V", "psi": "PSI",
    "jensen_shannon": "Jensen–Shannon distance", "js": "Jensen–Shannon distance",
    "abs_diff": "difference in proportions", "auc": "AUC", "mmd": "MMD", "ks": "KS statistic",
    "tv": "total-variation distance", "total_variation": "total-variation distance",
}


def finite_number(value: Any) -> float | None:
    """``value`` as a finite float, else ``None``: what a formatter prints as "n/a", and how a number is
    read from an open mapping (a test's ``details``), whose content the contract does not check."""
    if value is None or isinstance(value, bool):
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def no_negative_zero(text: str) -> str:
    """``"-0.00"`` → ``"0.00"``: a value that rounds to zero has no sign worth printing."""
    return text[1:] if text.startswith("-") and not text.strip("-0.,% ") else text


def fmt_num(value: Any, digits: int = 2, missing: str = "n/a") -> str:
    f = finite_number(value)
    return missing if f is None else no_negative_zero(f"{f:.{digits}f}")


def fmt_ci(ci: Sequence[float | None] | None, digits: int = 2) -> str:
    lo, hi = (ci[0], ci[1]) if ci is not None and len(ci) == 2 else (None, None)
    if lo is None or hi is None:
        return ""
    return f"[{fmt_num(lo, digits)}, {fmt_num(hi, digits)}]"


def fmt_metric(value: Any, ci: Any = None, digits: int = 2, missing: str = "n/a") -> str:
    """``0.61 [0.52, 0.70]``; the interval is omitted when unknown, ``missing`` when the value is."""
    if finite_number(value) is None:
        return missing
    text = fmt_num(value, digits)
    interval = fmt_ci(ci, digits)
    return f"{text} {interval}" if interval else text


def fmt_share(value: Any, missing: str = "n/a") -> str:
    """A proportion as a percentage; one decimal below 1 % so that small shares are not '0 %'."""
    f = finite_number(value)
    if f is None:
        return missing
    pct = 100 * f
    if pct != 0 and abs(pct) < 1:
        return no_negative_zero(f"{pct:.1f} %")
    return no_negative_zero(f"{pct:.0f} %")


def fmt_value(value: Any) -> str:
    """Any parameter value as short text: floats to four significant digits (no float reprs
    such as ``0.49429999999999996``), ints as written, lists joined, ``None`` as ``—``."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return "—"
        return f"{value:,.0f}" if abs(value) >= 10_000 else no_negative_zero(f"{value:.4g}")
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt_value(v) for v in value)
    return str(value)


def fmt_mean(value: Any) -> str:
    """A column mean as people write it: ``1,998`` (a year), ``0.0675``, ``1,550``; never ``2e+03``."""
    f = finite_number(value)
    if f is None:
        return "n/a"
    if abs(f) >= 100:
        return no_negative_zero(f"{f:,.0f}")
    return no_negative_zero(f"{f:.3g}") if abs(f) >= 1e-3 or f == 0 else no_negative_zero(f"{f:.2e}")


def fmt_decision(decision: Decision | None) -> str:
    """A limitation's ``decision`` as one line: statistic and value, interval, test and adjusted p, rows, rule.

    >>> from reports.result import Decision
    >>> fmt_decision(Decision(statistic="accuracy difference", value=0.59, interval=[0.55, 0.62],
    ...                       test="two_proportion_z", p_value_adjusted=1e-9, n=2700, rule="adjusted p < α"))
    'accuracy difference 0.59 [0.55, 0.62]; two proportion z, adjusted p < 0.001; n=2,700. Rule: adjusted p < α.'
    """
    if decision is None or not decision.rule:
        return ""
    parts = [f"{(decision.statistic or 'statistic').replace('_', ' ')} {fmt_metric(decision.value, decision.interval)}"]
    if decision.test:
        p = decision.p_value_adjusted
        parts.append(decision.test.replace("_", " ") + (f", {fmt_p(p, 'adjusted p')}" if p is not None else ""))
    if decision.n is not None:
        parts.append(fmt_n(decision.n))
    return "; ".join(parts) + f". Rule: {decision.rule.rstrip('.')}."


def fmt_seconds(value: Any) -> str:
    """Seconds as recorded in the AuditResult's ``timings`` (three decimals), with the unit."""
    f = finite_number(value)
    return "—" if f is None else f"{no_negative_zero(f'{f:.3f}')} s"


def fmt_p(value: Any, name: str = "p") -> str:
    f = finite_number(value)
    if f is None:
        return f"{name} n/a"
    if f < 0.001:
        return f"{name} < 0.001"
    return f"{name} = {f:.3f}" if f < 0.1 else f"{name} = {f:.2f}"


def fmt_n(value: Any) -> str:
    f = finite_number(value)
    return "n=n/a" if f is None else f"n={int(round(f)):,}"


def metric_label(name: Any) -> str:
    """Readable metric name: ``macro_f1`` → ``macro-F1``, ``balanced_accuracy`` → ``balanced accuracy``."""
    key = str(name or "metric").strip()
    return _METRIC_LABELS.get(key.lower(), key.replace("_", " "))


def effect_label(name: Any) -> str:
    key = str(name or "effect size").strip()
    return _EFFECT_LABELS.get(key.lower(), key.replace("_", " "))


def shorten(text: Any, limit: int = 80) -> str:
    """User-supplied names as short single-line text (a 100 kB column name must not flood a report)."""
    s = " ".join(str("" if text is None else text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def capitalise(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text
