"""The production rows behind each next-round target: untested contexts as slice expressions, every
target's mask, and the candidate rows the plan chooses from."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from domains import evaluate
from reports.selection import has_duplicates
from slicelang import compare, equals, is_missing, one_of

__all__ = ["MISSING_VALUE", "IMAGE_PATH", "untested_definition", "target_masks", "candidates_frame"]

MISSING_VALUE = "<missing>"  # how the context detector names a missing category
# the column an image upload keeps for each row's image (the service's intake writes it)
IMAGE_PATH = "image_path"


def untested_definition(u: Any, slice_definitions: dict[str, str]) -> str | None:
    """The slice expression selecting exactly the rows of an untested context."""
    if u.kind in ("unseen_slice", "rare_slice"):
        return slice_definitions.get(u.name)
    if u.column is None:
        return None
    if u.kind == "below_range":
        return compare(u.column, "<", u.value)
    if u.kind == "above_range":
        return compare(u.column, ">", u.value)
    if u.kind == "pooled_values":  # lists the most frequent values (u.other_values holds the rest)
        return one_of(u.column, u.value)
    if u.value == MISSING_VALUE:
        return is_missing(u.column)
    return equals(u.column, u.value)


def target_masks(limitations: list, state: Any) -> dict[str, np.ndarray]:
    """Production rows of every next-round target: slices and untested contexts, by name."""
    masks = {name: m[1] for name, m in state.slices.items()}
    wanted = [(lim.slice, lim.definition) for lim in limitations if lim.slice is not None and lim.definition]
    # an untested context (e.g. a pooled group of new values) is a plan target even when no limitation names it
    wanted += [(u.name, untested_definition(u, state.definitions))
               for u in (state.context.untested_contexts if state.context is not None else ())]
    for name, definition in wanted:
        if name in masks or not definition:
            continue
        try:
            masks[name] = evaluate(definition, state.ctx.production).to_numpy()
        except (ValueError, KeyError):
            continue
    return masks


def candidates_frame(production: pd.DataFrame, id_column: str | None, uncertainty: np.ndarray | None,
                     predictions: np.ndarray | None, masks: dict[str, np.ndarray]) -> pd.DataFrame:
    """Production rows the next round may ask to label, with one boolean column per target."""
    ids = production[id_column].to_numpy() if id_column else np.arange(len(production))
    frame = pd.DataFrame({"id": ids, "uncertainty": uncertainty if uncertainty is not None
                          else np.full(len(production), 0.5)})
    if predictions is not None:
        frame["prediction"] = predictions
    if IMAGE_PATH in production.columns:  # an image upload: the plan names each row's image
        frame["image"] = production[IMAGE_PATH].to_numpy()
    for name, mask in masks.items():
        frame[name] = np.asarray(mask, dtype=bool)
    # an id names one item to label: a repeated id (the same item twice, or partitions that number
    # their rows independently) is offered once
    return frame.drop_duplicates("id") if id_column and has_duplicates(frame["id"]) else frame
