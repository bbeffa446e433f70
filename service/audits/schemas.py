"""Request and response bodies of ``/v1/audits``, and what an audit row keeps of its request."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Mapping

from pydantic import BaseModel, Field, ValidationError, model_validator

from audit.options import AuditOptions
from service.errors import StoredOptionsInvalid

__all__ = ["AuditCreate", "AuditState", "AuditStatus", "AuditList", "AuditRequest"]

AuditState = Literal["queued", "running", "succeeded", "failed"]  # an audit row's status


class AuditCreate(BaseModel):
    model_config = {"extra": "forbid"}

    benchmark: str | None = Field(default=None, min_length=1, max_length=64)
    benchmark_series: str | None = Field(default=None, min_length=1, max_length=128,
                                         description="Audit against the union of this benchmark series' rounds "
                                                     "instead of one 'benchmark' dataset.")
    production: str = Field(min_length=1, max_length=64)
    domain: str = Field(default="generic", min_length=1, max_length=64)
    annotations: str | None = Field(default=None, max_length=64,
                                    description="Dataset of role 'annotations': item_id, annotator_id, label.")
    options: AuditOptions = Field(default_factory=AuditOptions)

    @model_validator(mode="after")
    def _one_benchmark(self) -> "AuditCreate":
        if (self.benchmark is None) == (self.benchmark_series is None):
            raise ValueError("name exactly one of 'benchmark' (a dataset) and 'benchmark_series' (a benchmark series)")
        return self


class AuditStatus(BaseModel):
    id: str
    status: AuditState
    progress: float = 0.0
    stage: str | None = None
    domain: str | None = None
    benchmark: str | None = None
    production: str | None = None
    created_at: datetime | None = None
    finished_at: datetime | None = None
    verdict: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class AuditList(BaseModel):
    items: list[AuditStatus]


class AuditRequest(BaseModel):
    """What an audit row keeps of its request: the audit's typed options, and the annotations
    dataset and benchmark series it names. Stored as one flat JSON object (the options' fields
    beside ``annotations`` and ``benchmark_series``), read back to this type at the worker."""

    model_config = {"extra": "forbid", "frozen": True}

    options: AuditOptions = Field(default_factory=AuditOptions)
    annotations: str | None = None  # a dataset id of role "annotations"
    benchmark_series: dict[str, Any] | None = None  # {"name", "rounds", "dataset"}: the series audited against

    def stored(self) -> dict[str, Any]:
        """The JSON an audit row keeps."""
        extra = {k: v for k, v in (("annotations", self.annotations), ("benchmark_series", self.benchmark_series))
                 if v is not None}
        return {**self.options.model_dump(mode="json"), **extra}

    @classmethod
    def from_stored(cls, audit_id: str, stored: Mapping[str, Any] | None) -> "AuditRequest":
        """Parse a row's JSON back to the type.

        Raises
        ------
        StoredOptionsInvalid
            The stored options no longer fit :class:`AuditOptions` (the message names the field).
        """
        rest = dict(stored or {})
        annotations, series = rest.pop("annotations", None), rest.pop("benchmark_series", None)
        try:
            return cls(options=AuditOptions.model_validate(rest), annotations=annotations, benchmark_series=series)
        except ValidationError as exc:
            raise StoredOptionsInvalid(
                f"The stored options of audit {audit_id!r} do not fit the audit's options, so it is not run; "
                "submit it again (POST /v1/audits).",
                details={"audit_id": audit_id, "problem": str(exc)[:2000]}) from None
