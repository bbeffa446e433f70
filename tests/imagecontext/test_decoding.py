"""Decoding: every mode becomes upright RGB uint8; every bad input raises ImageError."""
from __future__ import annotations

import io
import resource
from pathlib import Path

import numpy as np
import pytest
import skimage.data
from PIL import Image

from imagecontext import ImageError, decode
from tests.imagecontext.images import encode, photos

GIF = Path(skimage.data.__file__).parent / "no_time_for_that_tiny.gif"


@pytest.mark.parametrize("mode", ["CMYK", "P", "L", "LA", "RGBA", "I;16", "1", "YCbCr"])
def test_every_mode_decodes_to_rgb(mode):
    im = Image.fromarray(photos()["coffee"][:120, :160]).convert(mode if mode != "I;16" else "L")
    if mode == "I;16":
        im = Image.fromarray(np.asarray(im).astype(np.uint16) * 257)
    fmt = "JPEG" if mode in ("CMYK", "YCbCr") else "TIFF" if mode == "I;16" else "PNG"
    d = decode(encode_pil(im, fmt))
    assert d.rgb.shape == (120, 160, 3) and d.rgb.dtype == np.uint8
    assert d.mode == mode or (mode == "YCbCr" and d.mode == "RGB")
    assert not d.rgb.flags.writeable


def test_sixteen_bit_is_scaled_not_clipped():
    grey = np.asarray(Image.fromarray(photos()["coffee"]).convert("L")).astype(np.uint16)
    d = decode(encode_pil(Image.fromarray(grey * 257), "TIFF"))
    assert abs(int(d.rgb[..., 0].astype(int).mean()) - int(grey.mean())) <= 1


def test_alpha_composited_on_white():
    rgba = skimage.data.logo().copy()  # RGBA (opaque as shipped): make its left half transparent
    rgba[:, :250, 3] = 0
    d = decode(encode(rgba))
    assert d.has_alpha
    assert (d.rgb[:, :250] == 255).all()
    assert np.array_equal(d.rgb[:, 250:], rgba[:, 250:, :3])


def test_animated_gif_first_frame_and_frame_count():
    d = decode(GIF)
    assert d.n_frames > 1 and d.format == "GIF"
    with Image.open(GIF) as im:
        first = np.asarray(im.convert("RGB"))
    assert np.array_equal(d.rgb, first)


def test_exif_orientation_applied():
    im = Image.fromarray(photos()["coffee"][:100, :200])
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise on display
    buf = io.BytesIO()
    im.save(buf, "JPEG", exif=exif)
    d = decode(buf.getvalue())
    assert (d.width, d.height) == (100, 200)


def test_path_and_bytes_agree(tmp_path):
    data = encode(photos()["chelsea"], "JPEG", quality=80)
    path = tmp_path / "cat.jpg"
    path.write_bytes(data)
    a, b = decode(path), decode(data)
    assert np.array_equal(a.rgb, b.rgb) and a.sha256 == b.sha256


def encode_pil(im: Image.Image, fmt: str) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt)
    return buf.getvalue()


def _bomb_png(side: int) -> bytes:
    # a 1-bit PNG of side×side zeros compresses to a few kilobytes
    return encode_pil(Image.new("1", (side, side)), "PNG")


BAD = {
    "empty": (lambda: b"", "empty"),
    "not_an_image": (lambda: b"name,age\nann,3\n" * 20, "not_an_image"),
    "truncated": (lambda: encode(photos()["astronaut"], "JPEG")[:5000], "truncated"),
    "corrupt": (lambda: _corrupt_png(), "corrupt"),
    "bomb": (lambda: _bomb_png(20_000), "too_many_pixels"),
}


def _corrupt_png() -> bytes:
    data = bytearray(encode(photos()["coffee"]))
    data[200:2000] = bytes(1800)  # zeroed IDAT: the zlib stream breaks
    return bytes(data)


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_images_raise_image_error_with_bounded_memory(case):
    make, reason = BAD[case]
    data = make()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ImageError) as info:
        decode(data, max_pixels=10_000_000)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert info.value.reason == reason, str(info.value)
    assert grown_mb < 100  # a 400-megapixel bomb would need 400 MB just as 1-bit→RGB


def test_too_many_bytes_refused_before_reading(tmp_path):
    path = tmp_path / "big.png"
    path.write_bytes(encode(photos()["coffee"]))
    with pytest.raises(ImageError, match="too_many_bytes"):
        decode(path, max_bytes=1000)


def test_limits_validated():
    with pytest.raises(ValueError, match="max_pixels"):
        decode(b"x", max_pixels=0)
