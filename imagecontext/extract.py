"""All derived values of one decoded image, under stable column names.

:func:`extract` returns a flat ``dict`` (column name -> value; ``None`` where a value
does not apply, e.g. JPEG quality of a PNG, or skin tone when no face was found: then
``skin_missing`` says why).
:data:`COLUMNS` lists the names in order; :func:`embed` gives the appearance embedding,
stored as ``emb_0`` .. ``emb_{EMBEDDING_DIM-1}`` (:func:`embedding_columns`).

>>> import numpy as np, io
>>> from PIL import Image
>>> from imagecontext.decoding import decode
>>> buf = io.BytesIO(); Image.new("RGB", (64, 48), (90, 60, 40)).save(buf, "JPEG", quality=30)
>>> values = extract(decode(buf.getvalue()))
>>> values["img_format"], values["img_jpeg_quality"], values["face_count"], list(values) == list(COLUMNS)
('JPEG', 30, 0, True)
"""
from __future__ import annotations

from typing import Literal

import numpy as np

from imagecontext.compression import double_compressed
from imagecontext.decoding import DecodedImage
from imagecontext.embedding import EMBEDDING_DIM, EMBEDDING_PREFIX, appearance_embedding
from imagecontext.faces import detect_faces
from imagecontext.file_facts import file_facts
from imagecontext.pixel_stats import pixel_stats
from imagecontext.sharpness import noise_level, sharpness
from imagecontext.skin import skin_tone_face, skin_tone_lesion

__all__ = ["COLUMNS", "TEXT_COLUMNS", "EMBEDDING_EXTRACTOR", "extract", "embed", "embedding_columns", "extractor_of"]

COLUMNS = (
    "img_format", "img_width", "img_height", "img_aspect", "img_megapixels", "img_bytes",
    "img_n_frames", "img_jpeg_quality", "img_chroma_subsampling",
    "img_jpeg_coarseness", "img_jpeg_standard_tables", "img_jpeg_double", "img_blockiness",
    "img_brightness", "img_contrast", "img_dark_share", "img_saturated_share",
    "img_cast_a", "img_cast_b", "img_saturation", "img_sharpness", "img_noise",
    "face_found", "face_count", "face_confidence", "face_rotation",
    "face_area_share", "face_height_px", "face_center_x", "face_center_y",
    "skin_ita", "skin_ita_category", "skin_confidence", "skin_missing",
    "skin_surround_ita", "skin_surround_category", "skin_surround_confidence", "skin_surround_missing",
)
# the columns holding text (every other column is a number or a flag)
TEXT_COLUMNS = ("img_format", "img_chroma_subsampling", "skin_ita_category", "skin_missing",
                "skin_surround_category", "skin_surround_missing")

# which extractor (module of this package) gives each column: what a report cites as the source
_EXTRACTOR_COLUMNS = {
    "file_facts": COLUMNS[:11], "compression": COLUMNS[11:13], "pixel_stats": COLUMNS[13:20],
    "sharpness": COLUMNS[20:22], "faces": COLUMNS[22:30], "skin": COLUMNS[30:],
}
_EXTRACTORS = {column: f"imagecontext.{name}" for name, cols in _EXTRACTOR_COLUMNS.items() for column in cols}
EMBEDDING_EXTRACTOR = "imagecontext.embedding"


def extractor_of(column: str) -> str | None:
    """The extractor that derives ``column`` (``None`` for a name no extractor gives).

    >>> extractor_of("img_brightness"), extractor_of("face_count"), extractor_of("emb_3")
    ('imagecontext.pixel_stats', 'imagecontext.faces', 'imagecontext.embedding')
    """
    index = column[len(EMBEDDING_PREFIX):]
    if column.startswith(EMBEDDING_PREFIX) and index.isdigit() and int(index) < EMBEDDING_DIM:
        return EMBEDDING_EXTRACTOR
    return _EXTRACTORS.get(column)


def extract(image: DecodedImage, *, faces: bool = True,
            skin: Literal["auto", "face", "lesion", "none"] = "auto") -> dict[str, object]:
    """Derived context values of ``image``, keyed by :data:`COLUMNS`.

    Parameters
    ----------
    image : DecodedImage
    faces : bool
        Run the face detector (the costly part); ``False`` gives ``face_*`` as ``None``.
    skin : {"auto", "face", "lesion", "none"}
        Where skin is measured: the largest face (``skin_*``, missing with ``no_face`` when
        none is found); the image minus its central dark blob (``skin_surround_*``,
        dermatology); ``auto`` = the face's, and the surround's when no face is found.
    """
    if skin not in ("auto", "face", "lesion", "none"):
        raise ValueError(f"skin must be 'auto', 'face', 'lesion' or 'none', got {skin!r}")
    rgb = image.rgb
    # the pixel statistics all measure at the canonical size: resize once, not per statistic
    small = image.canonical
    facts = file_facts(image)
    luma = image.luma  # native pixels: the JPEG grid, noise and sharpness need them
    grid = image.blockiness
    stats = pixel_stats(small)
    out: dict[str, object] = {
        "img_format": facts.format, "img_width": facts.width, "img_height": facts.height,
        "img_aspect": facts.aspect, "img_megapixels": facts.megapixels,
        "img_bytes": facts.n_bytes, "img_n_frames": facts.n_frames,
        "img_jpeg_quality": facts.jpeg_quality,
        "img_chroma_subsampling": facts.chroma_subsampling,
        "img_jpeg_coarseness": facts.jpeg_coarseness,
        "img_jpeg_standard_tables": facts.jpeg_standard_tables,
        "img_jpeg_double": double_compressed(luma, image.jpeg_quantization[0], grid)[0]
        if image.jpeg_quantization else None,
        "img_blockiness": grid,
        "img_brightness": stats.brightness, "img_contrast": stats.contrast,
        "img_dark_share": stats.dark_share, "img_saturated_share": stats.saturated_share,
        "img_cast_a": stats.cast_a, "img_cast_b": stats.cast_b,
        "img_saturation": stats.saturation,
        "img_sharpness": sharpness(luma), "img_noise": noise_level(luma),
    }
    # the detector looks at the canonical copy first, and above it (small faces) only when
    # nothing was found
    found = detect_faces(rgb, working=small) if faces else None
    largest = found.largest if found is not None else None
    # an image without a detected face carries no face-derived value (a size of 0 would
    # read as "a very small face" in a slice on it)
    out.update({
        "face_found": found.found if found is not None else None,
        "face_count": found.count if found is not None else None,
        "face_confidence": largest.confidence if largest else None,
        "face_rotation": found.rotation if found is not None and largest else None,
        "face_area_share": largest.area_share if largest else None,
        "face_height_px": largest.h * image.height if largest else None,
        "face_center_x": largest.centre[0] if largest else None,
        "face_center_y": largest.centre[1] if largest else None,
    })
    # the face's skin (face domains) and the skin around a central lesion (dermatology) are
    # two columns: a photo without a face gets no face skin tone, whatever its colours
    face_tone = surround = None
    if skin in ("auto", "face") and found is not None:
        face_tone = skin_tone_face(small, largest, rotation=found.rotation,
                                   face_confidence=largest.confidence if largest else None)
    if skin == "lesion" or (skin == "auto" and (found is None or largest is None)):
        surround = skin_tone_lesion(small)
    out.update(_skin_columns("skin_ita", "skin_ita_category", "skin_confidence", "skin_missing", face_tone))
    out.update(_skin_columns("skin_surround_ita", "skin_surround_category", "skin_surround_confidence",
                             "skin_surround_missing", surround))
    return out


def _skin_columns(ita: str, category: str, confidence: str, missing: str, tone) -> dict[str, object]:
    if tone is None:  # not measured (skin="none", faces=False, or the other path)
        return {ita: None, category: None, confidence: None, missing: None}
    return {ita: tone.ita, category: tone.category, confidence: tone.confidence, missing: tone.missing}


def embed(image: DecodedImage) -> np.ndarray:
    """The appearance embedding of ``image``: float32, shape (EMBEDDING_DIM,), measured at the
    canonical size like the statistics: on the benchmark photos at 640 and 1024 px the vector of
    the full-size pixels (extractor version 2) had cosine similarity above 0.9999 to it, and cost
    about 2.5 times as much."""
    return appearance_embedding(image.canonical, image.blockiness)


def embedding_columns() -> tuple[str, ...]:
    """Column names of the embedding: ``emb_0`` .. ``emb_{EMBEDDING_DIM-1}``."""
    return tuple(f"{EMBEDDING_PREFIX}{i}" for i in range(EMBEDDING_DIM))
