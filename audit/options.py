"""The options of one audit: what the caller tunes, each with a default.

The same typed object travels from the request (REST body, CLI flags, a monitor's definition) to
the pipeline; stored audits keep it as JSON and parse it back to this type.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["AuditOptions"]


class AuditOptions(BaseModel):
    """Tuning knobs of one audit; every field has a sane default."""

    model_config = {"extra": "forbid"}

    alpha: float = Field(default=0.05, gt=0, lt=0.5, description="Significance level after correction.")
    correction: Literal["bh", "holm", "bonferroni"] = "bh"
    seed: int = Field(default=0, ge=0, le=2**32 - 1, description="NumPy seeds are 32-bit.")
    budget: int = Field(default=500, ge=0, le=10_000_000, description="Rows to label in the next round.")
    min_slice_size: int | None = Field(default=None, ge=1, description="Default: the domain pack's.")
    discovery: bool = Field(default=True, description="Search for weak slices beyond the expert ones.")
    evidently_companion: bool = Field(default=False, description="Also render Evidently's drift page.")
    saturation_threshold: float = Field(default=0.8, gt=0, le=1)
    engine: Literal["pandas", "dask"] | None = Field(
        default=None, description="Where the statistics are computed; default: CONTEXTSHIFT_ENGINE (pandas).")
    sample_rows: int = Field(default=200_000, ge=1_000, le=50_000_000,
                             description="Dask engine: rows per dataset kept (uniformly) for the row-level tests.")
    report_thumbnails: bool = Field(default=False, description="Image uploads: show up to 8 thumbnails of production "
                                    "rows inside each of the top 5 limitations in the HTML report.")
    report_thumbnails_medical: bool = Field(default=False, description="Also for the dermatology (medical) domain, "
                                            "whose images are patient data; without it they are not shown there.")
