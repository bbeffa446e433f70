"""Facts of the encoded file: format, size, and the JPEG quality it was saved at.

JPEG quality is estimated from the luminance quantisation table: the IJG (libjpeg)
encoder scales its standard table by ``5000 / q`` (``q < 50``) or ``200 - 2 q`` and
rounds; the estimate is the ``q`` in 1..100 whose scaled table is closest (sum of
absolute differences) to the file's. Encoders using other tables get the nearest IJG
quality, which still orders images by how coarsely they were quantised.

>>> jpeg_quality(tuple(ijg_luminance_table(30)))
30
>>> jpeg_quality(tuple(ijg_luminance_table(95)))
95
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from imagecontext.decoding import DecodedImage

__all__ = ["FileFacts", "file_facts", "jpeg_quality", "ijg_luminance_table"]

# The IJG standard luminance table (ITU-T T.81 Annex K), in natural row order.
_IJG_LUMINANCE = np.array([
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55,
    14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
    18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
], dtype=np.int64)
# Zig-zag scan order: position k of a zig-zag table holds natural index _ZIGZAG[k].
_ZIGZAG = np.array([
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27,
    20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
    58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63])


def ijg_luminance_table(quality: int) -> np.ndarray:
    """The IJG luminance table scaled to ``quality`` (1..100), natural order, shape (64,)."""
    if not 1 <= int(quality) <= 100:
        raise ValueError(f"quality must be in 1..100, got {quality!r}")
    q = int(quality)
    scale = 5000 // q if q < 50 else 200 - 2 * q
    return np.clip((_IJG_LUMINANCE * scale + 50) // 100, 1, 255)


_TABLES = np.stack([ijg_luminance_table(q) for q in range(1, 101)])  # (100, 64)


def jpeg_quality(luminance_table: tuple[int, ...]) -> int:
    """The IJG quality (1..100) whose luminance table best matches ``luminance_table``.

    The table may be in natural or zig-zag order (both are tried; the closer wins).
    """
    table = np.asarray(luminance_table, dtype=np.int64)
    if table.shape != (64,):
        raise ValueError(f"luminance_table must have 64 entries, got shape {table.shape}")
    natural = np.abs(_TABLES - table).sum(axis=1)
    unzig = np.empty(64, dtype=np.int64)
    unzig[_ZIGZAG] = table
    zigzag = np.abs(_TABLES - unzig).sum(axis=1)
    best = natural if natural.min() <= zigzag.min() else zigzag
    return int(np.argmin(best)) + 1


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


def file_facts(image: DecodedImage) -> FileFacts:
    """Facts of ``image``'s file (width and height after EXIF orientation)."""
    quality = None
    if image.jpeg_quantization:
        quality = jpeg_quality(image.jpeg_quantization[0])
    return FileFacts(format=image.format, width=image.width, height=image.height,
                     aspect=image.width / image.height,
                     megapixels=image.width * image.height / 1e6, n_bytes=image.n_bytes,
                     n_frames=image.n_frames, jpeg_quality=quality,
                     chroma_subsampling=image.jpeg_subsampling)
