"""Notes on what the two datasets are before any test runs: production that is the benchmark itself,
the columns the service derived from images, contexts only production has."""
from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

__all__ = ["identical_copy_notes", "derived_columns", "production_only_context_notes"]

DERIVED_PREFIX = "img_"  # the image extractor's columns


def identical_copy_notes(benchmark: pd.DataFrame, production: pd.DataFrame, benchmark_ref: Mapping[str, Any],
                         production_ref: Mapping[str, Any]) -> list[dict[str, str]]:
    """A note when production is the benchmark itself (the same dataset, or the same rows and values): every
    test then compares the data with themselves, which a user should hear rather than read as "no change"."""
    bench_id = benchmark_ref.get("id")
    same_dataset = bench_id is not None and bench_id == production_ref.get("id")
    if not same_dataset and not (benchmark.shape == production.shape and benchmark.equals(production)):
        return []
    what = "the same dataset" if same_dataset else "an identical copy of the benchmark (the same rows and values)"
    return [{"part": "production data", "reason": (
        f"Production is {what}: every test compares the data with themselves, so no change can be found. Check "
        "that the intended production file was uploaded.")}]


def derived_columns(benchmark: pd.DataFrame, production: pd.DataFrame, benchmark_ref: Mapping[str, Any],
                    production_ref: Mapping[str, Any]) -> list[str]:
    """The columns the service derived from either side's images: the pack contexts derived, the image
    values they come from, and every ``img_*`` column of an image upload."""
    columns: set[str] = set()
    for ref in (benchmark_ref, production_ref):
        derived = ref.get("derived_context") or {}
        sources = {str(v.get("from")) for v in derived.values() if isinstance(v, Mapping) and v.get("from")}
        columns |= set(derived) | sources
    if columns:  # an image upload: the extractor's own columns too
        columns |= {str(c) for frame in (benchmark, production) for c in frame.columns
                    if str(c).startswith(DERIVED_PREFIX)}
    return sorted(columns)


def production_only_context_notes(contexts: tuple[str, ...], derived: list[str]) -> list[dict[str, str]]:
    """A note per context only production has: a derived one cannot be recorded, a recorded one can."""
    out = []
    for column in contexts:
        out.append({"part": f"context {column}", "reason": (
            f"'{column}' is derived from the images in production only (the benchmark's images give no value for "
            "it), so none of its contexts can be evaluated against the benchmark." if column in derived else
            f"'{column}' is recorded in production but not in the benchmark, so none of its contexts can be "
            "evaluated: record it in the next round.")})
    return out
