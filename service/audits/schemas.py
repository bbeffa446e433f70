"""Request and response bodies of ``/v1/audits``, and what an audit row keeps of its request."""
from __future__ import annotations

from typing import Any, Mapping

from pydantic import BaseModel, Field, ValidationError

from audit.options import AuditOptions
from service.errors import StoredOptionsInvalid

__all__ = ["AuditRequest"]


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
