"""One statistics policy: every lower-is-better / proportion question is answered by
detectors.metric_registry, and "saturated" means the same in an audit and in a benchmark's rounds."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from detectors import metric_registry
from detectors.metric_registry import METRIC_REGISTRY, is_proportion, lower_is_better, saturated
from reports.findings_labels import label_findings
from reports.records import RankingContext
from reports.result import as_evidence
from service.rounds import stats as round_stats

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("detectors", "service", "reports", "domains")
SPELLINGS = {s for info in METRIC_REGISTRY for s in (info.name, *info.aliases)}
LOWER = {s for info in METRIC_REGISTRY if info.lower_is_better for s in (info.name, *info.aliases)}


def _literal_names(node: ast.AST) -> set[str] | None:
    """The strings of a literal tuple/list/set (or frozenset/set/tuple of one), else None."""
    wrapped = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1
    if wrapped and node.func.id in ("frozenset", "set", "tuple"):
        node = node.args[0]
    if not isinstance(node, (ast.Tuple, ast.List, ast.Set)) or len(node.elts) < 2:
        return None
    if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return None
    return {e.value for e in node.elts}


def _targets(node: ast.AST) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def own_metric_sets(source: str) -> list[str]:
    """Places in ``source`` that define a metric policy of their own: a literal collection of
    lower-is-better metric names (two or more, assigned or compared against), or a literal
    collection of metric names assigned to a name that says "lower" or "proportion".

    Dispatch lists (which metrics a function computes, e.g. ``metric in ("accuracy",
    "error_rate")``) are not a policy and are not flagged."""
    found = []
    for node in ast.walk(ast.parse(source)):
        candidates = []
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            named = any(("lower" in t.lower() or "proportion" in t.lower()) for t in _targets(node))
            candidates.append((node.value, named))
        elif isinstance(node, ast.Compare):
            candidates += [(c, False) for op, c in zip(node.ops, node.comparators)
                           if isinstance(op, (ast.In, ast.NotIn))]
        for value, named in candidates:
            names = _literal_names(value)
            if names and names <= SPELLINGS and (named or names <= LOWER):
                found.append(f"line {node.lineno}: {sorted(names)}")
    return found


def test_the_finder_sees_the_definitions_it_is_meant_to_forbid():
    assert own_metric_sets('LOWER_IS_BETTER = ("error_rate", "fpr")\n')
    assert own_metric_sets('lower = metric in ("error_rate", "fpr", "false_positive_rate")\n')
    assert own_metric_sets('PROPORTIONS = ("accuracy", "error_rate", "sensitivity", "precision")\n')
    assert own_metric_sets('_L = frozenset({"fpr", "ece", "brier"})\n')
    assert not own_metric_sets('if metric in ("accuracy", "error_rate"):\n    pass\n')  # a dispatch, not a policy


@pytest.mark.slow
def test_no_module_outside_the_registry_defines_its_own_metric_direction_or_kind():
    offenders = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "detectors" / "metric_registry.py":
                continue
            hits = own_metric_sets(path.read_text(encoding="utf-8"))
            if hits:
                offenders[str(path.relative_to(ROOT))] = hits
    assert not offenders, f"ask detectors.metric_registry instead: {offenders}"


def test_every_alias_answers_like_its_metric():
    for info in METRIC_REGISTRY:
        for spelling in (info.name, *info.aliases, info.name.upper()):
            assert lower_is_better(spelling) == info.lower_is_better
            assert is_proportion(spelling) == info.proportion
    assert lower_is_better("false_positive_rate") and lower_is_better("error") and not lower_is_better("auc")


def test_formatting_and_slice_results_answer_from_the_registry():
    from detectors.slice_results import _worse
    from reports.formatting import lower_is_better as report_lower

    assert report_lower is metric_registry.lower_is_better
    for spelling in SPELLINGS:
        assert _worse(spelling, 0.1) == lower_is_better(spelling)


def _audit_flags_saturation(metric: str, value: float, ci: tuple[float, float], threshold: float) -> bool:
    audit = {"overall": {"metric": metric, "benchmark_value": value, "benchmark_ci": list(ci), "n": 2000},
             "parameters": {"alpha": 0.05}, "benchmark": {"n_rows": 2000}, "label": {}}
    ctx = RankingContext.from_audit(audit, saturation_threshold=threshold, alpha=0.05, priors=None)
    return any(lim.kind == "benchmark_saturation" for lim in label_findings(as_evidence(audit), ctx))


@pytest.mark.parametrize("metric", ["accuracy", "balanced_accuracy", "sensitivity"])
def test_audit_and_rounds_agree_on_saturation(metric):
    """Over point values and interval widths around the threshold, the audit flags a saturated
    benchmark exactly when the rounds call their last round saturated: the lower bound decides,
    a point value past the threshold with an interval reaching below it does not."""
    rng = np.random.default_rng(3)
    threshold = 0.9
    agreed = flagged = point_only = 0
    for _ in range(300):
        value = float(rng.uniform(0.85, 0.99))
        half = float(rng.uniform(0.001, 0.05))
        ci = (max(0.0, value - half), min(1.0, value + half))
        estimate = round_stats.Estimate(value, ci[0], ci[1], 2000)
        in_rounds = round_stats.saturated(estimate, metric, threshold)
        in_audit = _audit_flags_saturation(metric, value, ci, threshold)
        agreed += in_rounds == in_audit
        flagged += in_audit
        point_only += value >= threshold and not in_audit
    assert agreed == 300
    assert flagged > 20 and point_only > 20  # both sides of the rule were exercised


def test_saturated_is_the_interval_rule():
    assert saturated("accuracy", 0.91, 0.95, threshold=0.9)
    assert not saturated("accuracy", 0.89, 0.95, threshold=0.9)
    assert saturated("error_rate", 0.02, 0.08, threshold=0.9)  # an error rate credibly at most 0.1
    assert not saturated("error_rate", 0.02, 0.12, threshold=0.9)
    assert not saturated("accuracy", None, None, threshold=0.9)
    assert not saturated("accuracy", float("nan"), 0.99, threshold=0.9)
