"""All derived values of one decoded image, under stable column names.

:func:`extract` returns a flat ``dict`` (column name -> value; ``None`` where a value
does not apply, e.g. JPEG quality of a PNG or skin tone when no skin was found).
:data:`COLUMNS` lists the names in order; :func:`embed` gives the appearance embedding,
stored as ``img_emb_0`` .. ``img_emb_{EMBEDDING_DIM-1}`` (:func:`embedding_columns`).

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

from imagecontext.decoding import DecodedImage
from imagecontext.embedding import EMBEDDING_DIM, appearance_embedding
from imagecontext.faces import detect_faces
from imagecontext.file_facts import file_facts
from imagecontext.pixel_stats import pixel_stats
from imagecontext.sharpness import noise_level, sharpness
from imagecontext.skin import skin_tone_face, skin_tone_lesion

__all__ = ["COLUMNS", "EMBEDDING_EXTRACTOR", "extract", "embed", "embedding_columns", "extractor_of"]

COLUMNS = (
    "img_format", "img_width", "img_height", "img_aspect", "img_megapixels", "img_bytes",
    "img_n_frames", "img_jpeg_quality", "img_chroma_subsampling",
    "img_brightness", "img_contrast", "img_dark_share", "img_saturated_share",
    "img_cast_a", "img_cast_b", "img_saturation", "img_sharpness", "img_noise",
    "face_count", "face_area_share", "face_height_px", "face_center_x", "face_center_y", "face_pose",
    "skin_ita", "skin_ita_category", "skin_source",
)

# which extractor (module of this package) gives each column: what a report cites as the source
_EXTRACTOR_COLUMNS = {
    "file_facts": COLUMNS[:9], "pixel_stats": COLUMNS[9:16], "sharpness": COLUMNS[16:18],
    "faces": COLUMNS[18:24], "skin": COLUMNS[24:],
}
_EXTRACTORS = {column: f"imagecontext.{name}" for name, cols in _EXTRACTOR_COLUMNS.items() for column in cols}
EMBEDDING_EXTRACTOR = "imagecontext.embedding"


def extractor_of(column: str) -> str | None:
    """The extractor that derives ``column`` (``None`` for a name no extractor gives).

    >>> extractor_of("img_brightness"), extractor_of("face_count"), extractor_of("img_emb_3")
    ('imagecontext.pixel_stats', 'imagecontext.faces', 'imagecontext.embedding')
    """
    if column.startswith("img_emb_") and column[8:].isdigit() and int(column[8:]) < EMBEDDING_DIM:
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
        Where skin is measured: the largest face; the image minus its central dark blob
        (dermatology); ``auto`` = face if one is found, else lesion.
    """
    if skin not in ("auto", "face", "lesion", "none"):
        raise ValueError(f"skin must be 'auto', 'face', 'lesion' or 'none', got {skin!r}")
    rgb = image.rgb
    # the pixel statistics all measure at the canonical size: resize once, not per statistic
    small = image.canonical
    facts = file_facts(image)
    stats = pixel_stats(small)
    out: dict[str, object] = {
        "img_format": facts.format, "img_width": facts.width, "img_height": facts.height,
        "img_aspect": facts.aspect, "img_megapixels": facts.megapixels,
        "img_bytes": facts.n_bytes, "img_n_frames": facts.n_frames,
        "img_jpeg_quality": facts.jpeg_quality,
        "img_chroma_subsampling": facts.chroma_subsampling,
        "img_brightness": stats.brightness, "img_contrast": stats.contrast,
        "img_dark_share": stats.dark_share, "img_saturated_share": stats.saturated_share,
        "img_cast_a": stats.cast_a, "img_cast_b": stats.cast_b,
        "img_saturation": stats.saturation,
        "img_sharpness": sharpness(small), "img_noise": noise_level(small),
    }
    # the detector works below the canonical size, so it starts from the shrunk image
    # (an image smaller than that was enlarged for the statistics: detect on the original)
    shrunk = small.shape[0] < rgb.shape[0] or small.shape[1] < rgb.shape[1]
    found = detect_faces(small if shrunk else rgb) if faces else None
    largest = found.largest if found is not None else None
    out.update({
        "face_count": found.count if found is not None else None,
        "face_area_share": largest.area_share if largest else (0.0 if found else None),
        "face_height_px": largest.h * image.height if largest else None,
        "face_center_x": largest.centre[0] if largest else None,
        "face_center_y": largest.centre[1] if largest else None,
        "face_pose": largest.pose if largest else None,
    })
    tone = None
    if skin in ("auto", "face") and largest is not None:
        tone = skin_tone_face(rgb, largest)
    elif skin == "lesion" or (skin == "auto" and found is not None and largest is None):
        tone = skin_tone_lesion(small)
    out.update({"skin_ita": tone.ita if tone else None,
                "skin_ita_category": tone.category if tone else None,
                "skin_source": tone.source if tone else None})
    return out


def embed(image: DecodedImage) -> np.ndarray:
    """The appearance embedding of ``image``: float32, shape (EMBEDDING_DIM,), measured at the
    canonical size like the statistics: on the benchmark photos at 640 and 1024 px the vector of
    the full-size pixels (extractor version 2) had cosine similarity above 0.9999 to it, and cost
    about 2.5 times as much."""
    return appearance_embedding(image.canonical)


def embedding_columns() -> tuple[str, ...]:
    """Column names of the embedding: ``img_emb_0`` .. ``img_emb_{EMBEDDING_DIM-1}``."""
    return tuple(f"img_emb_{i}" for i in range(EMBEDDING_DIM))
