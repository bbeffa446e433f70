"""Facts of the encoded file: format, size, and how its JPEG tables quantised it.

JPEG quality is the IJG (libjpeg) quality whose luminance table is as coarse (geometric mean
of the 64 steps, :mod:`imagecontext.compression`) as the file's: for libjpeg/Pillow files it
is the quality they were saved at, and for other encoders' tables it keeps their order by
coarseness (the nearest table by differences did not: a Photoshop-style "low" table read q92,
finer than a q90 file). ``jpeg_standard_tables`` says whether the tables are IJG ones at all.

>>> jpeg_quality(tuple(ijg_luminance_table(30)))
30
>>> jpeg_quality(tuple(ijg_luminance_table(95)))
95
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from imagecontext.compression import coarseness, quality_of_coarseness, standard_tables
from imagecontext.decoding import DecodedImage
from imagecontext.tables import ijg_luminance_table

__all__ = ["FileFacts", "file_facts", "jpeg_quality", "ijg_luminance_table"]


def jpeg_quality(luminance_table: tuple[int, ...]) -> int:
    """The IJG quality (1..100) as coarse as ``luminance_table`` (any scan order)."""
    table = np.asarray(luminance_table, dtype=np.int64)
    if table.shape != (64,):
        raise ValueError(f"luminance_table must have 64 entries, got shape {table.shape}")
    return quality_of_coarseness(coarseness(tuple(table)))


@dataclass(frozen=True)
class FileFacts:
    """Format and size of the file; JPEG quality and subsampling (``None`` if not JPEG)."""

    format: str
    width: int
    height: int
    aspect: float
    megapixels: float
    n_bytes: int
    n_frames: int
    jpeg_quality: int | None
    chroma_subsampling: str | None
    jpeg_coarseness: float | None = None
    jpeg_standard_tables: bool | None = None


def file_facts(image: DecodedImage) -> FileFacts:
    """Facts of ``image``'s file (width and height after EXIF orientation)."""
    quality = coarse = standard = None
    if image.jpeg_quantization:
        quality = jpeg_quality(image.jpeg_quantization[0])
        coarse = coarseness(image.jpeg_quantization[0])
        standard = standard_tables(image.jpeg_quantization)
    return FileFacts(format=image.format, width=image.width, height=image.height,
                     aspect=image.width / image.height,
                     megapixels=image.width * image.height / 1e6, n_bytes=image.n_bytes,
                     n_frames=image.n_frames, jpeg_quality=quality,
                     chroma_subsampling=image.jpeg_subsampling,
                     jpeg_coarseness=coarse, jpeg_standard_tables=standard)
