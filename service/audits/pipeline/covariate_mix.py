"""Is a context-mix change the covariate shift seen through the contexts?

When production's inputs move (an older population, say), every context that depends on those
inputs moves too: the share of adult staff, of the clinics adults go to, of later pandemic days. Each
passes its own share test, and one fact became eight change claims. To tell them apart the
benchmark is reweighted to production's distribution of the shifted inputs
(:func:`detectors.density_ratio.density_ratio_weights`); a context's production share (or mix) that
the reweighted benchmark reproduces — not significant and below the context's practical floor — is
the covariate shift seen through that context and folds into the covariate-shift limitation. The
context's own columns are left out of the reweighting, so a context is never explained by itself.
The same weights test a numeric context's distribution, a rare context whose share grew (clinics with
too few benchmark rows, more common among older patients) and the observed class mix — the last only
when the class mix was tried as the explanation of the inputs and failed (:mod:`class_mix`), since a
density ratio on label-dependent inputs reproduces a pure class-mix change as well.
The re-test only decides the grouping; it claims nothing.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from detectors.context import CONTEXT_EFFECT_FLOORS
from detectors.density_ratio import density_ratio_weights
from domains._syntax import parse
from domains.expressions import columns_used
from reports.grouping import Relation
from service.audits.pipeline.class_mix import retest_under_class_mix
from service.audits.pipeline.reweighted_mix import column_explained, limitation_mix_explained

MAX_FEATURES = 8  # the most shifted inputs the weights are fitted on


def _shifted_features(covariate: Any, ctx: Any) -> list[str]:
    tested = sorted((f for f in covariate.evidence.get("features") or [] if f.get("name")),
                    key=lambda f: -(f.get("effect_size") or 0.0))
    names = [f["name"] for f in tested if f["name"] in ctx.benchmark.columns and f["name"] in ctx.production.columns]
    return list(dict.fromkeys(names))[:MAX_FEATURES]


def columns_of(definition: str | None) -> set[str]:
    try:
        return set(columns_used(parse(definition))) if definition else set()
    except ValueError:
        return set()


def covariate_mix_relations(found: list, masks: dict, bench_masks: dict, relations: list, state: Any) -> list:
    """Context-mix changes, rare contexts whose share grew and an observed class-mix change that the
    covariate shift explains fold into the covariate-shift limitation."""
    covariate = next((lim for lim in found if lim.kind == "covariate_shift"), None)
    if covariate is None:
        return []
    taken = {r.child for r in relations}
    if covariate.key in taken:  # the covariate shift is itself explained (by a context, by the class mix)
        return []
    ctx = state.ctx
    features = _shifted_features(covariate, ctx)
    if not features:
        return []
    cache: dict[tuple, np.ndarray | None] = {}

    def weights(used: tuple) -> np.ndarray | None:
        if used not in cache:
            cache[used] = density_ratio_weights(ctx.benchmark[list(used)], ctx.production[list(used)],
                                                random_state=ctx.seed)
        return cache[used]

    out = []
    for lim in found:
        if lim.kind not in ("context_mix_shift", "untested_context") or lim.key in taken or lim.claim != "change":
            continue
        if lim.kind == "untested_context" and not (lim.key in bench_masks and bench_masks[lim.key].any()):
            continue  # no benchmark row of it: no reweighting of the benchmark can produce it
        column = lim.evidence.get("name") if lim.evidence.get("kind") == "context" else None
        own = {column} if column else columns_of(lim.definition)
        used = tuple(f for f in features if f not in own)
        w = weights(used) if used else None
        if w is not None and limitation_mix_explained(lim, w, masks, bench_masks, ctx):
            out.append(Relation(lim.key, covariate.key, "covariate_mix", note=(
                "the benchmark reweighted to production's " + ", ".join(used[:4]) + " has the production share")))
    label = _label_explained(found, taken, features, weights, state)
    if label is not None:
        out.append(Relation(label.key, covariate.key, "covariate_mix", note=(
            "the benchmark reweighted to production's " + ", ".join(features[:4]) + " has the production class mix")))
    return out


def _label_explained(found: list, taken: set, features: list[str], weights: Any, state: Any) -> Any:
    """The observed class-mix change, when the benchmark reweighted to production's shifted inputs has
    production's class mix: the inputs moved and what the model's task looks like given them did not.

    Only reached when the class mix does not explain the covariate shift (that relation, in
    :mod:`service.audits.pipeline.class_mix`, comes first and takes the covariate shift), so a pure class-mix
    change, which a density ratio on label-dependent inputs reproduces as well, stays a label shift."""
    label = next((lim for lim in found if lim.kind == "label_shift" and lim.claim == "change"
                  and lim.evidence.get("source") == "observed_labels" and lim.key not in taken), None)
    bench, prod = state.bench_out, state.prod_out
    if label is None or bench is None or prod is None or bench.y_true is None or prod.y_true is None:
        return None
    evidence = next(lim for lim in found if lim.kind == "covariate_shift").evidence
    retest = retest_under_class_mix(state, list(dict.fromkeys(f["name"] for f in evidence.get("features") or [])),
                                    [o["name"] for o in evidence.get("outputs") or []])
    if retest is None or not retest.remaining:
        return None  # the class mix was not tested as the explanation, or it explains the inputs: no direction
    w = weights(tuple(features))
    if w is None:
        return None
    ok = column_explained(w, bench.y_true, prod.y_true, state.ctx.alpha, CONTEXT_EFFECT_FLOORS["cramers_v"])
    return label if ok else None
