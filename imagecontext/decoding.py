"""Decode an image once, within limits, into an RGB array plus the facts of its file.

Every image becomes an ``(height, width, 3)`` ``uint8`` RGB array, upright:

* EXIF orientation is applied (a phone photo taken sideways is measured upright);
* CMYK, YCbCr, LAB and HSV are converted to RGB; palette (``P``) images are expanded;
* grey (``L``), 1-bit (``1``) and 16-bit (``I;16``, ``I``) images are scaled to 8 bits
  and replicated to three channels;
* alpha (``LA``, ``RGBA``, ``PA``, palette transparency) is composited on WHITE, so a
  transparent background reads as a bright, unsaturated background rather than black;
  ``has_alpha`` records that it was there;
* animated images (GIF, APNG, WebP, multi-page TIFF) give their first frame, with
  ``n_frames`` recorded.

Limits are checked before pixels are decoded: the byte size first, then the pixel count
from the header, so a decompression bomb is refused without allocating its pixels. Two
formats are read from their own headers before Pillow opens them: an ``.ico``/``.cur`` (Pillow
decodes its largest image inside ``open``, so every entry's size is checked first, PNG and
bitmap entries alike), and a TIFF, whose pages are counted by walking its directory chain,
at most :data:`MAX_FRAMES` (Pillow would walk all of them to count them). Grey and 16-bit
pixels are scaled to 8 bits a band of rows at a time, so a 16-bit image under the pixel cap
needs about 6 bytes per pixel at its peak, not 30. Every failure raises :class:`ImageError`
whose ``reason`` is one of ``empty``, ``too_many_bytes``, ``not_an_image``,
``too_many_pixels``, ``too_many_frames``, ``truncated`` or ``corrupt``.

>>> import io
>>> from PIL import Image
>>> buf = io.BytesIO(); Image.new("RGBA", (4, 2), (0, 0, 0, 0)).save(buf, "PNG")
>>> d = decode(buf.getvalue())
>>> d.rgb.shape, d.rgb[0, 0].tolist(), d.has_alpha, d.format
((2, 4, 3), [255, 255, 255], True, 'PNG')
>>> decode(b"")
Traceback (most recent call last):
...
imagecontext.decoding.ImageError: empty: the image has 0 bytes
"""
from __future__ import annotations

import hashlib
import io
import os
import struct
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, JpegImagePlugin, UnidentifiedImageError

from imagecontext.canonical import canonical_rgb

__all__ = ["ImageError", "DecodedImage", "decode", "DEFAULT_MAX_PIXELS", "DEFAULT_MAX_BYTES", "MAX_FRAMES"]

DEFAULT_MAX_PIXELS = 50_000_000
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
MAX_FRAMES = 1000  # pages of a TIFF, counted from its headers; frame 0 is all that is decoded
_BAND_ROWS = 256  # rows scaled to 8 bits at a time
_SAMPLING = {0: "4:4:4", 1: "4:2:2", 2: "4:2:0"}


class ImageError(ValueError):
    """An image that cannot be decoded within the limits; ``reason`` says why."""

    def __init__(self, reason: str, detail: str):
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}")


@dataclass(frozen=True, eq=False)
class DecodedImage:
    """An upright RGB image and the facts of the file it came from.

    Attributes
    ----------
    rgb : ndarray of shape (height, width, 3), uint8
        The pixels, read-only.
    format : str
        The container format Pillow identified (``JPEG``, ``PNG``, ...).
    mode : str
        The file's original Pillow mode (``RGB``, ``CMYK``, ``P``, ``I;16``, ...).
    n_bytes : int
        Size of the encoded file.
    n_frames : int
        Frames in the file (1 unless animated or multi-page); only frame 0 is decoded.
    has_alpha : bool
        The file carried transparency (composited on white).
    jpeg_quantization : tuple of tuple of int, or None
        The JPEG quantisation tables (table 0 is luminance), ``None`` for other formats.
    jpeg_subsampling : str or None
        JPEG chroma subsampling (``4:4:4``, ``4:2:2``, ``4:2:0``), ``None`` if unknown.
    sha256 : str
        Hex digest of the encoded bytes (a cache key).
    """

    rgb: np.ndarray = field(repr=False)
    format: str
    mode: str
    n_bytes: int
    n_frames: int
    has_alpha: bool
    jpeg_quantization: tuple[tuple[int, ...], ...] | None = field(default=None, repr=False)
    jpeg_subsampling: str | None = None
    sha256: str = ""

    @cached_property
    def canonical(self) -> np.ndarray:
        """The pixels at the canonical size (longest side 256, :mod:`imagecontext.canonical`),
        made once per image: every statistic and the embedding measure this array."""
        small = canonical_rgb(self.rgb)
        small.setflags(write=False)
        return small

    @cached_property
    def luma(self) -> np.ndarray:
        """Luma (H, W) uint8 at native resolution, made once per image: compression forensics,
        noise and sharpness read native pixels (a resize hides the JPEG grid and averages noise)."""
        import cv2  # OpenCV is already loaded by canonical_rgb's module

        out = cv2.cvtColor(np.ascontiguousarray(self.rgb), cv2.COLOR_RGB2GRAY)
        out.setflags(write=False)
        return out

    @cached_property
    def blockiness(self) -> float:
        """The JPEG grid strength of the native pixels (:func:`imagecontext.compression.blockiness`),
        made once per image: a column and the embedding read it."""
        from imagecontext.compression import blockiness  # compression's tables need nothing of this module

        return blockiness(self.luma)

    @property
    def height(self) -> int:
        return int(self.rgb.shape[0])

    @property
    def width(self) -> int:
        return int(self.rgb.shape[1])


def _read(source: bytes | str | os.PathLike, max_bytes: int) -> bytes:
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > max_bytes:
            raise ImageError("too_many_bytes", f"{len(data)} bytes exceed max_bytes={max_bytes}")
        return data
    path = Path(source)
    try:
        size = path.stat().st_size
    except OSError as err:
        raise ImageError("not_an_image", f"cannot read {path.name!r}: {err.strerror}") from None
    if size > max_bytes:  # checked before reading, so a huge file is never loaded
        raise ImageError("too_many_bytes", f"{size} bytes exceed max_bytes={max_bytes}")
    with path.open("rb") as fh:
        return fh.read(max_bytes + 1)


def _bands(height: int):
    for top in range(0, height, _BAND_ROWS):
        yield slice(top, min(top + _BAND_ROWS, height))


def _grey_to_8bit(im: Image.Image) -> np.ndarray:
    """A grey image of 16/32-bit integers or floats scaled to ``uint8``, a band of rows at a time."""
    arr = np.asarray(im)  # the native dtype (uint16, int32, float32): no float64 copy of the image
    if im.mode == "F":
        top = 1.0 if arr.size and np.nanmax(arr) <= 1.0 else 255.0
    else:
        top = 65535.0 if im.mode.startswith("I;16") or (arr.size and arr.max() > 255) else 255.0
    grey = np.empty(arr.shape, dtype=np.uint8)
    for rows in _bands(arr.shape[0]):
        band = np.nan_to_num(arr[rows].astype(np.float32)) * np.float32(255.0 / top) + np.float32(0.5)
        grey[rows] = np.clip(band, 0, 255).astype(np.uint8)
    return grey


def _on_white(im: Image.Image) -> np.ndarray:
    """RGBA composited on white (out = a*rgb + (1-a)*255), a band of rows at a time."""
    rgba = np.asarray(im if im.mode == "RGBA" else im.convert("RGBA"))
    out = np.empty(rgba.shape[:2] + (3,), dtype=np.uint8)
    for rows in _bands(rgba.shape[0]):
        band = rgba[rows].astype(np.uint16)
        alpha = band[:, :, 3:4]
        out[rows] = ((band[:, :, :3] * alpha + 255 * (255 - alpha) + 127) // 255).astype(np.uint8)
    return out


def _to_rgb(im: Image.Image) -> tuple[np.ndarray, bool]:
    mode = im.mode
    if mode == "P":
        im = im.convert("RGBA" if "transparency" in im.info else "RGB")
        mode = im.mode
    elif mode == "L" and "transparency" in im.info:
        im = im.convert("LA")
        mode = "LA"
    if mode in ("RGBA", "LA", "PA", "RGBa", "La"):
        return _on_white(im), True
    if mode.startswith("I") or mode == "F":
        return np.repeat(_grey_to_8bit(im)[:, :, None], 3, axis=2), False
    # np.asarray copies the pixels once; convert() would copy an RGB image once more first
    return np.asarray(im if mode == "RGB" else im.convert("RGB")), False


def _ico_sizes(data: bytes) -> list[tuple[int, int]]:
    """Width and height of every image inside an ``.ico``/``.cur``, read from the embedded PNG's
    IHDR or the bitmap's header (the directory's own one-byte sizes stop at 256)."""
    count = struct.unpack_from("<H", data, 4)[0]
    sizes = []
    for i in range(count):
        entry = 6 + 16 * i
        if entry + 16 > len(data):
            raise ImageError("corrupt", "the icon directory is cut short")
        offset = struct.unpack_from("<I", data, entry + 12)[0]
        head = data[offset:offset + 26]
        if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24:
            sizes.append(struct.unpack(">II", head[16:24]))
        elif len(head) >= 12:  # BITMAPINFOHEADER: the height counts the image and its mask
            width, height = struct.unpack_from("<ii", head, 4)
            sizes.append((abs(width), abs(height) // 2))
        else:
            raise ImageError("corrupt", "an icon entry points past the end of the file")
    return sizes


def _tiff_pages(data: bytes, limit: int) -> int:
    """Pages of a TIFF, walking its chain of image directories (classic or BigTIFF) up to ``limit``."""
    order = "<" if data[:2] == b"II" else ">"
    big = struct.unpack_from(order + "H", data, 2)[0] == 43
    offset = struct.unpack_from(order + ("Q" if big else "I"), data, 8 if big else 4)[0]
    seen: set[int] = set()
    pages = 0
    while offset and offset not in seen:
        seen.add(offset)
        pages += 1
        if pages > limit:
            raise ImageError("too_many_frames", f"the TIFF has more than {limit} pages")
        try:
            if big:
                (n,) = struct.unpack_from(order + "Q", data, offset)
                (offset,) = struct.unpack_from(order + "Q", data, offset + 8 + 20 * n)
            else:
                (n,) = struct.unpack_from(order + "H", data, offset)
                (offset,) = struct.unpack_from(order + "I", data, offset + 2 + 12 * n)
        except struct.error:
            break  # a chain cut short: Pillow decides whether page 0 is readable
    return max(pages, 1)


def _header_checks(data: bytes, max_pixels: int) -> int | None:
    """Checks made on the raw header before Pillow sees the bytes; the TIFF page count, if TIFF."""
    try:
        if data[:4] in (b"\x00\x00\x01\x00", b"\x00\x00\x02\x00") and len(data) >= 6:
            for width, height in _ico_sizes(data):
                if width * height > max_pixels:
                    raise ImageError("too_many_pixels", f"an icon entry of {width}x{height} = {width * height} "
                                     f"pixels exceeds max_pixels={max_pixels}")
        elif data[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+") and len(data) >= 16:
            return _tiff_pages(data, MAX_FRAMES)
    except struct.error:
        raise ImageError("corrupt", "the header is cut short") from None
    return None


def decode(source: bytes | str | os.PathLike, *, max_pixels: int = DEFAULT_MAX_PIXELS,
           max_bytes: int = DEFAULT_MAX_BYTES) -> DecodedImage:
    """Decode ``source`` (encoded bytes or a file path) into a :class:`DecodedImage`.

    Parameters
    ----------
    source : bytes or path-like
        The encoded image.
    max_pixels : int
        Largest ``width * height`` accepted; checked from the header before decoding.
    max_bytes : int
        Largest encoded size accepted; checked before reading a file.

    Raises
    ------
    ImageError
        Empty, too large, not an image, truncated or corrupt; ``reason`` names which.
    """
    if max_pixels < 1:
        raise ValueError(f"max_pixels must be >= 1, got {max_pixels!r}")
    if max_bytes < 1:
        raise ValueError(f"max_bytes must be >= 1, got {max_bytes!r}")
    data = _read(source, max_bytes)
    if not data:
        raise ImageError("empty", "the image has 0 bytes")
    tiff_pages = _header_checks(data, max_pixels)
    try:
        with warnings.catch_warnings():
            # Pillow's own bomb check is global state; ours is per call, from the header
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = Image.open(io.BytesIO(data))
    except UnidentifiedImageError:
        raise ImageError("not_an_image", "the bytes are not an image format Pillow reads") from None
    except Image.DecompressionBombError as err:
        raise ImageError("too_many_pixels", str(err)) from None
    except (OSError, SyntaxError, ValueError) as err:
        raise ImageError("corrupt", f"unreadable header: {err}") from None
    with im:
        width, height = im.size
        if width * height > max_pixels:
            raise ImageError("too_many_pixels",
                             f"{width}x{height} = {width * height} pixels exceed max_pixels={max_pixels}")
        if width < 1 or height < 1:
            raise ImageError("corrupt", f"the header gives a {width}x{height} image")
        fmt = im.format or "unknown"
        mode = im.mode
        n_frames = tiff_pages or int(getattr(im, "n_frames", 1) or 1)
        quant = getattr(im, "quantization", None)
        quant = tuple(tuple(int(v) for v in quant[k]) for k in sorted(quant)) if quant else None
        sampling = None
        if fmt == "JPEG":
            sampling = _SAMPLING.get(JpegImagePlugin.get_sampling(im))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                if n_frames > 1:
                    im.seek(0)
                im.load()
                # in place: without an orientation tag the default returns a copy of every pixel
                ImageOps.exif_transpose(im, in_place=True)
                rgb, has_alpha = _to_rgb(im)
        except Image.DecompressionBombError as err:
            raise ImageError("too_many_pixels", str(err)) from None
        except OSError as err:
            reason = "truncated" if "truncated" in str(err).lower() else "corrupt"
            raise ImageError(reason, f"cannot decode the pixels: {err}") from None
        except (SyntaxError, ValueError, EOFError, IndexError, struct.error) as err:
            raise ImageError("corrupt", f"cannot decode the pixels: {err}") from None
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    rgb.setflags(write=False)
    return DecodedImage(rgb=rgb, format=fmt, mode=mode, n_bytes=len(data), n_frames=n_frames,
                        has_alpha=has_alpha, jpeg_quantization=quant, jpeg_subsampling=sampling,
                        sha256=hashlib.sha256(data).hexdigest())

