"""What the audit library raises when its inputs cannot be audited.

The library knows nothing of HTTP: a caller maps :class:`AuditInputError` to its own answer (the
service to a 422 with the same ``code`` and ``details``, the CLI to exit status 2).
"""
from __future__ import annotations

from typing import Any

__all__ = ["AuditInputError"]


class AuditInputError(ValueError):
    """Inputs the audit cannot run on, with a stable machine ``code`` and JSON ``details``.

    Parameters
    ----------
    message : str
        What is wrong and what to do about it, for a person.
    code : str, default="invalid_request"
        A stable machine-readable name of the problem (e.g. ``"cannot_audit"``).
    details : dict, optional
        JSON-ready facts behind the message (the columns involved, ...).
    """

    def __init__(self, message: str, *, code: str = "invalid_request", details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.details = dict(details or {})
