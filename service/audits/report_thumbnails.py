"""What the images add to an audit's report, from the service's image cache: thumbnails of production
rows, when the audit asked for them (and 1:1 native crops beside a finding about compression, noise or
sharpness), and beside every skin-tone finding the images' brightness and cast (HTML and Markdown).

The pipeline calls the function :func:`images_for` returns with the AuditResult and the production rows
before it renders the report, which is rendered once, with them (:func:`reports.report_images.report_images`
decides what to show). The thumbnails are read from the image cache through each production row's
``image_sha256`` (:mod:`service.datasets.images.cache`); a production table without image hashes (not
an image upload) gets a note instead.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from audit.options import AuditOptions
from reports.report_images import ReportImages, report_images
from reports.result import AuditResult
from service.datasets.images.cache import read_detail, read_thumbnail
from service.datasets.images.derive import HASH_COLUMN

__all__ = ["images_for", "ImagesFor"]

ImagesFor = Callable[[AuditResult, pd.DataFrame], "ReportImages | None"]


def images_for(settings: Any, *, options: AuditOptions, domain: str) -> ImagesFor:
    """What the images add to the report of an audit with these ``options`` under the pack ``domain``:
    a function of the AuditResult and the production rows (``None`` when they add nothing)."""
    def images(result: AuditResult, production: pd.DataFrame) -> ReportImages | None:
        read: Callable[[int], bytes | None] | None = None
        crop: Callable[[int], bytes | None] | None = None
        asked = bool(options.report_thumbnails)
        if HASH_COLUMN in production.columns:
            hashes = production[HASH_COLUMN].to_numpy()

            def read(i: int) -> bytes | None:
                return read_thumbnail(settings, hashes[i])

            def crop(i: int) -> bytes | None:
                return read_detail(settings, hashes[i])
        return report_images(result.limitations, production, read, thumbnails=asked,
                             seed=options.seed, domain=domain, medical_ok=options.report_thumbnails_medical,
                             read_detail=crop, detail_columns=_detail_contexts(result) if asked and crop else ())
    return images


def _detail_contexts(result: AuditResult) -> tuple[str, ...]:
    """The columns read on native pixels, and the contexts the pack derived from them (the deepfake
    pack's ``compression`` from ``img_jpeg_quality``): the findings a 1:1 crop illustrates."""
    import imagecontext  # lazy: OpenCV (~0.3 s), only for an image audit that asked for thumbnails

    derived = result.production.derived_context or {}
    return imagecontext.DETAIL_COLUMNS + tuple(
        name for name, origin in derived.items()
        if isinstance(origin, dict) and origin.get("from") in imagecontext.DETAIL_COLUMNS)
