"""Columns and rows one side cannot speak for: features with no values on one side (set aside, so the
other features are still tested) and a production label column filled on some rows only (the
labelled rows are measured, and whether they were chosen at random is checked on the contexts)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

import numpy as np
import pandas as pd
from scipy.stats import chi2_contingency

from audit.pipeline.columns import AuditColumns
from audit.pipeline.stage_context import StageContext

__all__ = ["LabelledRows", "set_aside_one_sided", "labelled_production", "labelled_context", "labelled_rows_note",
           "selection_note", "selection_tests"]

NUMERIC_BINS = 4  # quartiles of a numeric context: enough to see a selection on its level, few empty cells


@dataclass(frozen=True)
class LabelledRows:
    """The production rows that carry a label (a boolean mask over production's rows)."""

    mask: np.ndarray

    @property
    def n(self) -> int:
        return int(self.mask.sum())

    @property
    def n_total(self) -> int:
        return int(self.mask.size)


def _empty(frame: pd.DataFrame, column: str) -> bool:
    return column not in frame.columns or bool(frame[column].isna().all())


def set_aside_one_sided(benchmark: pd.DataFrame, production: pd.DataFrame, columns: AuditColumns,
                        notes: list[dict[str, str]], derived: Mapping[str, Any] | None = None) -> AuditColumns:
    """Features without a single value on one side are left out of the input tests, each with a note.

    Such a column carries no information on that side (a JPEG quality of PNG images, a field one
    system does not record): testing it would compare values with nothing, and an entirely empty
    benchmark column would stop the whole input test. ``derived``: the columns the service derived
    from images, which the note names as such."""
    derived_columns = set((derived or {}).get("columns") or ())
    kept, dropped = [], []
    for column in columns.features:
        sides = (("benchmark", benchmark), ("production", production))
        empty = [side for side, frame in sides if _empty(frame, column)]
        if not empty:
            kept.append(column)
            continue
        dropped.append(column)
        derived_note = column in derived_columns
        if len(empty) == 2:  # a face measure of images without faces, a field neither system records
            what = f"'{column}' has no values in either dataset, so it was set aside: there is nothing to test."
            origin = (" It is derived from the images, and none of them gives a value for it (no face found in "
                      "any, say)." if derived_note else "")
        else:
            side, other = empty[0], "production" if empty[0] == "benchmark" else "benchmark"
            what = (f"'{column}' has no values in the {side} but has values in the {other}, so it was set aside: "
                    "there is nothing to compare it with.")
            origin = (f" It is derived from the images, and the {side}'s images give no value for it (a JPEG "
                      "setting of PNG images, say)." if derived_note else "")
        notes.append({"part": f"feature {column}", "reason": f"{what}{origin} The other features were tested."})
    if not dropped:
        return columns
    return replace(columns, features=tuple(kept))


def labelled_production(production: pd.DataFrame, columns: AuditColumns) -> LabelledRows | None:
    """The labelled production rows when some, not all and not none, carry a label."""
    label = columns.production_label
    if label is None or label not in production.columns:
        return None
    mask = production[label].notna().to_numpy()
    if mask.all() or not mask.any():
        return None
    return LabelledRows(mask=mask)


def _binned(column: pd.Series) -> pd.Series:
    """A context column as categories: numeric ones by quartile (an integer code per bin)."""
    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column) and column.nunique() > 12:
        return pd.qcut(column, NUMERIC_BINS, duplicates="drop").cat.codes.astype(str)
    return column.astype(str)


def selection_tests(production: pd.DataFrame, labelled: LabelledRows,
                    contexts: tuple[str, ...]) -> list[tuple[str, float]]:
    """(context, p-value) of a chi-square test of labelled against unlabelled rows' mix, per context."""
    out = []
    for column in contexts:
        if column not in production.columns:
            continue
        values = _binned(production[column])
        table = pd.crosstab(values, labelled.mask)
        if table.shape[0] < 2 or table.shape[1] < 2:
            continue
        out.append((column, float(chi2_contingency(table.to_numpy())[1])))
    return out


MAX_CHECKED = 20  # columns compared between labelled and unlabelled rows (contexts first, else features)


def selection_note(production: pd.DataFrame, labelled: LabelledRows, contexts: tuple[str, ...],
                   alpha: float, features: tuple[str, ...] = ()) -> dict[str, str]:
    """Whether labels may be missing not at random: the labelled rows' mix of each context (of each
    feature when no context is recorded) against the unlabelled rows', Bonferroni-corrected over the
    columns tested (one note, saying what was found)."""
    tests = selection_tests(production, labelled, (contexts or features)[:MAX_CHECKED])
    kind = "contexts" if contexts else "features"
    if not tests:
        return {"part": "labelled production rows", "reason": (
            "Which production rows carry a label could not be checked against any context or feature, so the "
            "measured metrics hold for the labelled rows; labels given to easier or harder cases would bias "
            "them.")}
    threshold = alpha / len(tests)
    differing = [(c, p) for c, p in tests if p < threshold]
    if differing:
        names = ", ".join(f"{c} (p = {p:.2g})" for c, p in sorted(differing, key=lambda t: t[1])[:5])
        return {"part": "labelled production rows", "reason": (
            f"The labelled and unlabelled production rows differ in their mix of {names}: the labels were not "
            "given at random, so the measured metrics describe the labelled rows and may not hold for the "
            "unlabelled ones.")}
    tested = ", ".join(c for c, _ in tests[:8])
    return {"part": "labelled production rows", "reason": (
        f"The labelled and unlabelled production rows have the same mix of {tested} (chi-square test, alpha "
        f"{alpha:g} corrected over {len(tests)} {kind}): no sign that labels were given to particular cases, "
        f"although causes the {kind} do not record cannot be ruled out.")}


def labelled_rows_note(labelled: LabelledRows) -> dict[str, str]:
    return {"part": "production labels", "reason": (
        f"{labelled.n:,} of {labelled.n_total:,} production rows carry a label; the measured production metrics "
        f"use those {labelled.n:,} rows, the input and context tests use all {labelled.n_total:,}.")}


def labelled_context(ctx: StageContext, production: pd.DataFrame) -> tuple[LabelledRows, StageContext] | None:
    """With some production labels missing: the labelled rows and a stage context of them, which the label
    stages read (metrics, concept shift, discovery, attribution); ``ctx`` gets the notes saying so."""
    labelled = labelled_production(production, ctx.columns)
    if labelled is None:
        return None
    rows = production[labelled.mask].reset_index(drop=True)
    rows.attrs = dict(production.attrs)
    # the same options, notes and reference fits; its own shared cache (the strata are over its rows)
    lctx = StageContext(ctx.benchmark, rows, ctx.columns, ctx.pack, ctx.options, classes=ctx.classes,
                        notes=ctx.notes, reference=ctx.reference, parameters=ctx.parameters)
    ctx.notes.append(labelled_rows_note(labelled))
    ctx.notes.append(selection_note(production, labelled, ctx.columns.contexts, ctx.alpha,
                                    features=ctx.columns.features))
    return labelled, lctx
