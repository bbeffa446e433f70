"""Is a context-mix change the covariate shift seen through the contexts?

When production's inputs move (an older population, say), every context that depends on those
inputs moves too: the share of adult staff, of the clinics adults go to, of later pandemic days. Each
passes its own share test, and one fact became eight change claims. To tell them apart the
benchmark is reweighted to production's distribution of the shifted inputs
(:func:`detectors.density_ratio.density_ratio_weights`); a context's production share (or mix) that
the reweighted benchmark reproduces — not significant and below the context's practical floor — is
the covariate shift seen through that context and folds into the covariate-shift limitation. The
context's own columns are left out of the reweighting, so a context is never explained by itself.
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
from service.pipeline.class_mix import column_explained, share_explained

MAX_FEATURES = 8  # the most shifted inputs the weights are fitted on


def _shifted_features(covariate: Any, ctx: Any) -> list[str]:
    tested = sorted((f for f in covariate.evidence.get("features") or [] if f.get("name")),
                    key=lambda f: -(f.get("effect_size") or 0.0))
    names = [f["name"] for f in tested if f["name"] in ctx.benchmark.columns and f["name"] in ctx.production.columns]
    return list(dict.fromkeys(names))[:MAX_FEATURES]


def _columns_of(definition: str | None) -> set[str]:
    try:
        return set(columns_used(parse(definition))) if definition else set()
    except ValueError:
        return set()


def covariate_mix_relations(found: list, masks: dict, bench_masks: dict, relations: list, state: Any) -> list:
    """Context-mix changes that the covariate shift explains fold into the covariate-shift limitation."""
    covariate = next((lim for lim in found if lim.kind == "covariate_shift"), None)
    if covariate is None:
        return []
    taken = {r.child for r in relations}
    if covariate.key in taken:  # the covariate shift is itself explained by a context: nothing to fold into it
        return []
    ctx = state.ctx
    features = _shifted_features(covariate, ctx)
    if not features:
        return []
    cache: dict[tuple, np.ndarray | None] = {}
    out = []
    for lim in found:
        if lim.kind != "context_mix_shift" or lim.key in taken or lim.claim != "change":
            continue
        effect = lim.evidence.get("effect_name")
        floor = float(lim.evidence.get("effect_floor") or CONTEXT_EFFECT_FLOORS.get(effect, 0.02))
        column = lim.evidence.get("name") if lim.evidence.get("kind") == "context" and effect == "cramers_v" else None
        own = {column} if column else _columns_of(lim.definition)
        used = tuple(f for f in features if f not in own)
        if not used:
            continue
        if used not in cache:
            cache[used] = density_ratio_weights(ctx.benchmark[list(used)], ctx.production[list(used)],
                                                random_state=ctx.seed)
        w = cache[used]
        if w is None:
            continue
        if lim.key in masks and lim.key in bench_masks:
            explained = share_explained(w, bench_masks[lim.key], masks[lim.key], ctx.alpha, floor)
        elif column in ctx.benchmark.columns and column in ctx.production.columns:
            explained = column_explained(w, ctx.benchmark[column], ctx.production[column], ctx.alpha, floor)
        else:
            continue
        if explained:
            out.append(Relation(lim.key, covariate.key, "covariate_mix", note=(
                "the benchmark reweighted to production's " + ", ".join(used[:4])
                + " has the production share")))
    return out
