"""Context from images: pure functions from a decoded image to context values.

Decode once within limits (:func:`decode`), then :func:`extract` the derived context
(file facts, exposure, colour cast, sharpness, noise, faces, skin tone) and
:func:`embed` an appearance embedding. Nothing here imports the rest of contextshift.
:data:`EXTRACTOR_VERSION` changes whenever any derived value would change, so cached
values from an older version are recomputed.
"""
from imagecontext.decoding import DEFAULT_MAX_BYTES, DEFAULT_MAX_PIXELS, DecodedImage, ImageError, decode
from imagecontext.detail import DETAIL_COLUMNS, DETAIL_SIDE, detail_crop
from imagecontext.embedding import EMBEDDING_DIM, EMBEDDING_PREFIX
from imagecontext.extract import COLUMNS, TEXT_COLUMNS, embed, embedding_columns, extract, extractor_of

__all__ = ["EXTRACTOR_VERSION", "DEFAULT_MAX_BYTES", "DEFAULT_MAX_PIXELS", "DecodedImage",
           "ImageError", "decode", "extract", "embed", "embedding_columns", "COLUMNS", "TEXT_COLUMNS",
           "EMBEDDING_DIM", "EMBEDDING_PREFIX", "extractor_of", "DETAIL_COLUMNS", "DETAIL_SIDE", "detail_crop"]

# 4: CNN faces, normalised skin tone, compression forensics, native noise/sharpness, emb_* embedding
# 5: the skin around a lesion normalised by the frame's non-skin reference (or missing: no_reference);
#    a 1:1 native crop cached beside the thumbnail
EXTRACTOR_VERSION = "5"
