"""Request/response schemas of the REST API (kept apart from the internal objects)."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

ColumnRole = Literal["id", "feature", "context", "label", "prediction", "score", "embedding", "text",
                     "timestamp", "annotator", "ignore"]


class ErrorBody(BaseModel):
    code: str
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


class ErrorResponse(BaseModel):
    error: ErrorBody


class ColumnOut(BaseModel):
    name: str
    role: ColumnRole
    dtype: str


class ValidationOut(BaseModel):
    success: bool
    results: list[dict[str, Any]]


class DatasetOut(BaseModel):
    id: str
    name: str
    role: Literal["benchmark", "production"]
    domain: str | None
    n_rows: int
    n_columns: int
    columns: list[ColumnOut]
    validation: ValidationOut
    sha256: str
    created_at: datetime

    @classmethod
    def from_row(cls, row: Any) -> "DatasetOut":
        return cls.model_validate(row, from_attributes=True)


class DatasetList(BaseModel):
    items: list[DatasetOut]


class Health(BaseModel):
    status: Literal["ok"]


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse} for code in (400, 401, 404, 409, 413, 415, 422)
}
