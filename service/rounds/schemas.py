"""Request/response schemas of the benchmark routes (the series summary itself is
:class:`service.rounds.series.SeriesSummary`, serialised with ``to_dict()``)."""
from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

# A stall claims that gains stopped: it needs rounds whose interval rules out a gain that matters,
# not merely rounds too small to show one (with no floor, 8 of 20 series still gaining 5 points a
# round were called stalled early at 1,000 rows a round).
DEFAULT_MIN_GAIN = 0.05

SERIES_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$"


class RoundCreate(BaseModel):
    model_config = {"extra": "forbid"}

    dataset: str = Field(min_length=1, max_length=64, description="A labelled dataset with predictions.")
    plan: str | None = Field(default=None, max_length=64, description="The audit whose next-round plan this answers.")
    model: str | None = Field(default=None, max_length=128, description="Version label of the model under test.")


class RoundOut(BaseModel):
    benchmark: str
    number: int
    dataset: str
    plan: str | None
    model: str | None
    domain: str
    created_at: datetime | None = None


class SeriesItem(BaseModel):
    name: str
    domain: str
    n_rounds: int
    created_at: datetime | None = None


class SeriesList(BaseModel):
    items: list[SeriesItem]
