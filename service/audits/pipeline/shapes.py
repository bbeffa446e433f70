"""The AuditResult's one shape: detector records flattened where the contract is flat.

Detector results nest their tests (``ClassifierTestResult.test``, ``SliceShare.test``,
``LabelQualityResult.agreement``...). The pipeline flattens those few shapes once, here, before the
typed :class:`reports.result.AuditResult` is built, so that ``reports`` reads exactly one shape:
slice-share tests join ``semantic.contexts`` (kind ``slice_share``), the multivariate test and the
embedding test are flat test records, label quality is ``{krippendorff_alpha, alpha_ci,
annotators: [{id, share, ...}], ...}``. It copies only what it changes.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reports.formatting import as_list, ci_pair, get, num

__all__ = ["flatten_audit", "flat_test"]


def flat_test(value: Any) -> dict:
    """A result holding a ``test`` ShiftTest (e.g. ClassifierTestResult) as one flat dict:
    the test's fields, overridden by the result's own top-level fields (``is_shift``, ``auc``...)."""
    if not isinstance(value, Mapping):
        return {}
    inner = value.get("test")
    if not isinstance(inner, Mapping):
        return dict(value)
    flat = dict(inner)
    flat.update({k: v for k, v in value.items() if k != "test"})
    if isinstance(flat.get("is_shift"), bool) and not isinstance(flat.get("drifted"), bool):
        flat["drifted"] = flat["is_shift"]
    return flat


def _slice_share_tests(semantic: Mapping) -> list:
    """``SliceShare`` records (``{name, benchmark_share, production_share, test}``) as flat tests."""
    tests = []
    for share in as_list(semantic.get("slice_shares")):
        test = flat_test(share)
        test["kind"] = test.get("kind") or "slice_share"
        details = dict(test.get("details") or {})
        for key in ("benchmark_share", "production_share"):
            if num(share.get(key)) is not None:
                details.setdefault(key, share[key])
        test["details"] = details
        tests.append(test)
    return tests


def _semantic(semantic: Any) -> Any:
    if not isinstance(semantic, Mapping):
        return semantic
    out = dict(semantic)
    if "slice_shares" in semantic:
        out["contexts"] = as_list(semantic.get("contexts")) + _slice_share_tests(semantic)
        out.pop("slice_shares")
    if isinstance(semantic.get("embedding"), Mapping):
        out["embedding"] = _embedding(semantic["embedding"])
    return out


def _embedding(embedding: Mapping) -> dict:
    flat = flat_test(embedding)
    if "novel_regions" not in flat and "regions" in flat:
        regions = as_list(flat.get("regions"))
        if any("is_novel" in r for r in regions):
            regions = [r for r in regions if r.get("is_novel") is True]
        flat["novel_regions"] = [
            {**r, "top_contexts": r.get("top_contexts") or
             [c.get("condition") for c in as_list(r.get("contexts")) if c.get("condition")]} for r in regions]
    return flat


def _label_quality(lq: Any) -> Any:
    """``LabelQualityResult.to_dict()`` → ``{krippendorff_alpha, alpha_ci, annotators, ...}``."""
    if not isinstance(lq, Mapping) or "krippendorff_alpha" in lq:
        return lq
    out = dict(lq)
    agreement = lq.get("agreement") if isinstance(lq.get("agreement"), Mapping) else {}
    if agreement:
        out["krippendorff_alpha"] = agreement.get("alpha")
        out["alpha_ci"] = [agreement.get("ci_low"), agreement.get("ci_high")]
        out["n_items"] = lq.get("n_items", agreement.get("n_items"))
        out["n_items_agreement"] = agreement.get("n_items")  # items with two or more labels
        out["n_annotators"] = agreement.get("n_annotators")
    out["annotator_cap"] = lq.get("annotator_cap", lq.get("cap"))
    merged: dict[str, dict] = {}
    for share in as_list(lq.get("shares")):
        key = str(share.get("annotator", share.get("id")))
        merged.setdefault(key, {"id": key}).update(
            {k: share.get(k) for k in ("share", "n_labels", "over_cap") if k in share})
    for rel in as_list(lq.get("annotators")):
        key = str(rel.get("annotator", rel.get("id")))
        merged.setdefault(key, {"id": key}).update(
            {k: rel.get(k) for k in ("agreement", "near_chance", "share", "n_labels", "over_cap") if k in rel})
    out["annotators"] = list(merged.values())
    source = lq.get("source_agreement")
    if isinstance(source, Mapping) and num(source.get("agreement")) is not None:
        lo, hi = ci_pair(source.get("agreement_ci"))
        out["source_disagreement"] = {
            "rate": 1 - num(source["agreement"]), "n": source.get("n"), "sources": source.get("sources"),
            "ci": [None if hi is None else 1 - hi, None if lo is None else 1 - lo]}
    return out


def _covariate(covariate: Any) -> Any:
    if not isinstance(covariate, Mapping) or not isinstance(covariate.get("multivariate"), Mapping):
        return covariate
    out = dict(covariate)
    mv = flat_test(covariate["multivariate"])
    if num(mv.get("auc")) is not None:
        mv["details"] = {**(mv.get("details") or {}), "auc_ci": mv.get("auc_ci") or get(mv, "details", "auc_ci")}
        mv["statistic"] = mv["auc"]
    out["multivariate"] = mv
    return out


def flatten_audit(audit: Mapping) -> dict:
    """The audit with nested detector shapes flattened (see module docstring)."""
    if not isinstance(audit, Mapping):
        raise TypeError(f"audit must be a mapping (the AuditResult JSON), got {type(audit).__name__}.")
    out = dict(audit)
    if "semantic" in audit:
        out["semantic"] = _semantic(audit["semantic"])
    if "covariate" in audit:
        out["covariate"] = _covariate(audit["covariate"])
    if "label_quality" in audit:
        out["label_quality"] = _label_quality(audit["label_quality"])
    return out
