"""What a skin-tone finding must say beside it: the images' brightness and colour cast.

A skin tone derived from photos (an ITA group, mapped by the pack to 1..6; never a clinical
Fitzpatrick type) is read after exposure and white-balance normalisation, but a reader must
still be able to rule out that "darker skin" means "darker photos". For every limitation whose
rows are chosen by a skin-tone context (``skin_tone``, ``fitzpatrick``, ``skin_ita*``,
``skin_surround_*``), :func:`skin_tone_notes` compares the production rows inside it with the
others on the columns the images gave: median brightness (``img_brightness``, L* 0..100) and
colour cast (``img_cast_b``, b*: yellow +, blue -), the median skin-tone confidence, and the
share of rows whose skin tone is missing (with the commonest reason). The note says which
columns the finding rests on: ITA groups, not Fitzpatrick types.

>>> import pandas as pd
>>> rows = pd.DataFrame({"skin_tone": [5, 5, 1, 1], "img_brightness": [30.0, 32, 60, 62],
...                      "img_cast_b": [4.0, 5, 3, 4]})
>>> skin_tone_note("skin_tone in [5, 6]", rows)[:72]
'Skin tone here is an ITA group read from the photos, not a Fitzpatrick t'
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypeGuard

import numpy as np
import pandas as pd

from domains import evaluate

__all__ = ["SKIN_CONTEXTS", "is_skin_tone_definition", "skin_tone_note", "skin_tone_notes"]

SKIN_CONTEXTS = ("skin_tone", "fitzpatrick", "skin_ita", "skin_ita_category", "skin_surround_ita",
                 "skin_surround_category")
_NAME = re.compile(r"\b(" + "|".join(SKIN_CONTEXTS) + r")\b")


def is_skin_tone_definition(definition: str | None) -> TypeGuard[str]:
    """Whether a slice definition selects rows by a skin-tone column."""
    return bool(definition) and bool(_NAME.search(definition or ""))


def _median(values: pd.Series) -> float | None:
    numbers = pd.to_numeric(values, errors="coerce").dropna()
    return float(np.median(numbers)) if len(numbers) else None


def _fmt(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def skin_tone_note(definition: str, production: pd.DataFrame) -> str | None:
    """The note for one skin-tone limitation over ``production`` (``None`` when its rows or the
    image columns are not there)."""
    if "img_brightness" not in production.columns:
        return None
    try:
        inside = evaluate(definition, production).to_numpy(dtype=bool)
    except (ValueError, KeyError, TypeError):
        return None
    if not inside.any():
        return None
    rows, rest = production[inside], production[~inside]
    parts = ["Skin tone here is an ITA group read from the photos, not a Fitzpatrick type."]
    bright_in, bright_out = _median(rows["img_brightness"]), _median(rest["img_brightness"]) if len(rest) else None
    line = f"Brightness (median L*) {_fmt(bright_in)} inside vs {_fmt(bright_out)} elsewhere"
    if "img_cast_b" in production.columns:
        line += (f"; colour cast (median b*) {_fmt(_median(rows['img_cast_b']), 1)} vs "
                 f"{_fmt(_median(rest['img_cast_b']), 1) if len(rest) else 'n/a'}")
    parts.append(line + ".")
    if bright_in is not None and bright_out is not None and bright_out - bright_in >= 10:
        parts.append("These images are markedly darker than the others: check lighting before skin tone.")
    for column, missing in (("skin_confidence", "skin_missing"), ("skin_surround_confidence", "skin_surround_missing")):
        if column in production.columns and production[column].notna().any():
            confidence = _median(rows[column])
            share = float(production[missing].notna().mean()) if missing in production.columns else 0.0
            reasons = production[missing].dropna() if missing in production.columns else pd.Series(dtype=object)
            common = f" (mostly {reasons.mode().iat[0]})" if len(reasons) else ""
            parts.append(f"Skin-tone confidence (median) {_fmt(confidence, 2)} inside; "
                         f"{share:.0%} of production rows have no skin tone{common}.")
            break
    return " ".join(parts)


def skin_tone_notes(limitations: Sequence[Any], production: pd.DataFrame) -> dict[str, str]:
    """``{limitation key: note}`` for every limitation whose definition selects by skin tone."""
    out = {}
    for lim in limitations:
        definition = getattr(lim, "definition", None)
        if is_skin_tone_definition(definition):
            note = skin_tone_note(definition, production)
            if note:
                out[str(lim.key or lim.rank)] = note
    return out
