"""Request/response schemas of the benchmark routes (the series summary itself is
:class:`service.rounds.series.SeriesSummary`, serialised with ``to_dict()``)."""
from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

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
