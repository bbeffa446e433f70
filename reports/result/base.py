"""Field types and record bases shared by every section of the AuditResult.

A number in the result is finite or null: detectors may hand over NaN or infinity for "could not be
computed", and JSON has neither, so :data:`Number` turns them into ``None`` when the result is built.
Readers never check for NaN again.

>>> from pydantic import TypeAdapter
>>> TypeAdapter(list[Number]).validate_python([0.5, float("nan"), float("inf"), None])
[0.5, None, None, None]
"""
from __future__ import annotations

import math
from typing import Annotated, Any, Optional

from pydantic import BaseModel, BeforeValidator, ConfigDict

__all__ = ["Number", "Interval", "Closed", "Record", "finite"]


def finite(value: Any) -> Any:
    """NaN and ±infinity (floats or numpy scalars) as ``None``; everything else unchanged for pydantic to check."""
    if isinstance(value, bool) or value is None:
        return value
    try:
        if isinstance(value, (int, float)) or hasattr(value, "__float__") and not isinstance(value, str):
            f = float(value)
            return f if math.isfinite(f) else None
    except (TypeError, ValueError):
        return value
    return value


Number = Annotated[Optional[float], BeforeValidator(finite)]
Interval = Optional[list[Number]]


class _Model(BaseModel):
    def to_dict(self) -> dict[str, Any]:
        """The record as JSON values, as the AuditResult stores it (like a detector result's ``to_dict``)."""
        return self.model_dump(mode="json")


class Closed(_Model):
    """A record whose fields are all listed: anything else is refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Record(_Model):
    """A detector's record: the named fields are guaranteed, newer detectors may add more."""

    model_config = ConfigDict(extra="allow", frozen=True)

