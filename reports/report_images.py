"""What the images add to an audit's HTML report, decided before it is rendered (it is rendered once).

:class:`ReportImages` holds, by limitation key, the thumbnails of production rows
(:mod:`reports.thumbnails`) and the images' brightness and colour cast beside a skin-tone finding
(:mod:`reports.skin_context`), and why thumbnails that were asked for are missing.
:func:`report_images` computes them from the AuditResult's limitations and the production rows;
the image bytes come through ``read`` (row position -> encoded image bytes), so this module reads no
files and knows nothing of where images are cached.

>>> ReportImages().is_empty
True
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from detectors.base import Result
from reports.result import LimitationRecord
from reports.skin_context import skin_tone_notes
from reports.thumbnails import Reader, thumbnail_strips

__all__ = ["ReportImages", "report_images"]

NO_IMAGES = "Thumbnails were asked for, but the production data was not uploaded with its images."


@dataclass(frozen=True)
class ReportImages(Result):
    """Images and image notes shown beside the limitations of one report.

    thumbnails : {limitation key: (data URI, ...)}
        JPEG thumbnails shown inside each limitation.
    thumbnail_note : str or None
        Why some thumbnails that were asked for are missing (listed with the report's notes).
    notes : {limitation key: sentence}
        Shown beside the limitation (a skin-tone finding's brightness and cast).
    """

    thumbnails: Mapping[str, Sequence[str]] = field(default_factory=dict)
    thumbnail_note: str | None = None
    notes: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return not self.thumbnails and self.thumbnail_note is None and not self.notes


def report_images(limitations: Sequence[LimitationRecord], production: pd.DataFrame, read: Reader | None, *,
                  thumbnails: bool, seed: int = 0, domain: str | None = None,
                  medical_ok: bool = False) -> ReportImages | None:
    """What the images add to the report, or ``None`` when they add nothing.

    Parameters
    ----------
    limitations : sequence of LimitationRecord
        The AuditResult's ranked limitations.
    production : pandas.DataFrame of shape (n_rows, n_columns)
        The production rows the limitations' definitions select from; the skin-tone notes read its
        image-derived columns (``img_brightness``, ``img_cast_b``) when it has them.
    read : callable or None
        Row position -> encoded image bytes; ``None`` when the production rows came without images
        (thumbnails asked for then give a note instead).
    thumbnails : bool
        Whether the audit asked for thumbnails.
    seed, domain, medical_ok
        As :func:`reports.thumbnails.thumbnail_strips`.
    """
    # without thumbnails, only rows with the images' own columns can say anything about brightness and cast
    notes = skin_tone_notes(limitations, production) if thumbnails or "img_brightness" in production.columns else {}
    if not thumbnails:
        return ReportImages(notes=notes) if notes else None
    if read is None:
        return ReportImages(thumbnail_note=NO_IMAGES, notes=notes)
    strips, note = thumbnail_strips(limitations, production, read, seed=seed, domain=domain, medical_ok=medical_ok)
    return ReportImages(thumbnails=strips, thumbnail_note=note, notes=notes)
