"""What the images add to an audit's report, from the service's image cache: thumbnails of production
rows, when the audit asked for them, and beside every skin-tone finding the images' brightness and cast.

The pipeline calls the function :func:`images_for` returns with the AuditResult and the production rows
before it renders the report, which is rendered once, with them (:func:`reports.report_images.report_images`
decides what to show). The thumbnails are read from the image cache through each production row's
``image_sha256`` (:mod:`service.datasets.images.cache`); a production table without image hashes (not
an image upload) gets a note instead.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from reports.report_images import ReportImages, report_images
from reports.result import AuditResult
from service.datasets.images.cache import read_thumbnail
from service.datasets.images.derive import HASH_COLUMN

__all__ = ["images_for", "ImagesFor"]

ImagesFor = Callable[[AuditResult, pd.DataFrame], "ReportImages | None"]


def images_for(settings: Any, *, options: Mapping[str, Any], domain: str) -> ImagesFor:
    """What the images add to the report of an audit with these ``options`` under the pack ``domain``:
    a function of the AuditResult and the production rows (``None`` when they add nothing)."""
    def images(result: AuditResult, production: pd.DataFrame) -> ReportImages | None:
        read = None
        if HASH_COLUMN in production.columns:
            hashes = production[HASH_COLUMN].to_numpy()

            def read(i: int) -> bytes | None:
                return read_thumbnail(settings, hashes[i])
        return report_images(result.limitations, production, read, thumbnails=bool(options.get("report_thumbnails")),
                             seed=int(options.get("seed") or 0), domain=domain,
                             medical_ok=bool(options.get("report_thumbnails_medical")))
    return images
