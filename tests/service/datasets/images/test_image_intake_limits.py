"""Attacks on the image intake against a real server process (127.0.0.1): each one answers a clear
4xx (or a bounded success) naming its cause, while `/healthz` answers within 1 s, the server's peak
RSS (VmHWM of the server process, reset before each attack) stays under 1 GiB, and nothing is left
in scratch or in the image cache.

The server runs with CONTEXTSHIFT_MAX_DECOMPRESSED_MB=64 and CONTEXTSHIFT_MAX_ARCHIVE_MEMBERS=1000 so
the bombs that need to pass a limit stay small; the limits are checked the same way at any size.
"""
from __future__ import annotations

import io
import json
import os
import struct
import tarfile

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from tests.service.datasets.images.attacks import (
    HEALTHZ_BOUND_S,
    PEAK_RSS_BOUND_MB,
    attack,
    cache_files,
    corrupt_data,
    patch_member,
    png,
    scratch_files,
    upload,
    zip64_claiming,
    zip_of,
)
from tests.service.server import ServerProcess

MANIFEST = b"image,label\nimg/0.png,a\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs /proc to read the server's peak RSS")
    data_dir = tmp_path_factory.mktemp("intake")
    proc = ServerProcess(data_dir, CONTEXTSHIFT_SCHEDULER="false", CONTEXTSHIFT_MAX_DECOMPRESSED_MB="64",
                         CONTEXTSHIFT_MAX_ARCHIVE_MEMBERS="1000").start()
    proc.data_dir = data_dir
    yield proc
    proc.stop()


def refused(server, content: bytes, filename: str, status: int, code: str, *, says: str = "", **fields):
    """Send one attack; assert its answer, the memory and liveness bounds and that nothing stayed."""
    cached = cache_files(server.data_dir)
    outcome = attack(server, lambda: upload(server, content, filename, **fields))
    assert outcome.response.status_code == status, outcome.response.text[:500]
    error = outcome.error()
    assert error["code"] == code, error
    assert says in error["message"] + json.dumps(error["details"]), error
    assert outcome.peak_mb < PEAK_RSS_BOUND_MB, outcome
    assert outcome.healthz_worst_s < HEALTHZ_BOUND_S, outcome
    assert scratch_files(server.data_dir) == []
    assert cache_files(server.data_dir) == cached  # a refused upload adds nothing to the cache
    print(f"{filename}: {status} {code} in {outcome.seconds:.1f} s, peak RSS {outcome.peak_mb:.0f} MB, "
          f"slowest /healthz {outcome.healthz_worst_s * 1000:.0f} ms")
    return outcome


@pytest.mark.slow
def test_a_member_whose_header_lies_about_its_size(server):
    content = zip_of({"img/0.png": b"\x00" * (32 << 20), "manifest.csv": MANIFEST})
    content = patch_member(content, "img/0.png", size=1000)  # says 1 KB, inflates 32 MB
    refused(server, content, "liar.zip", 422, "bad_images", says="corrupt_member")


@pytest.mark.slow
def test_a_member_with_a_bad_crc(server):
    content = patch_member(zip_of({"img/0.png": png(), "manifest.csv": MANIFEST}), "img/0.png", crc=0x12345678)
    refused(server, content, "crc.zip", 422, "bad_images", says="Bad CRC")


def test_a_corrupt_deflate_stream(server):
    content = corrupt_data(zip_of({"img/0.png": png(256), "manifest.csv": MANIFEST}, level=9), "img/0.png")
    refused(server, content, "deflate.zip", 422, "bad_images", says="corrupt_member")


def test_a_manifest_that_inflates_past_the_limit(server):
    manifest = b"image,label\n" + b"img/0.png,a\n" * ((100 << 20) // 12)  # 100 MB of rows
    content = zip_of({"img/0.png": png(), "manifest.csv": manifest}, level=1)
    assert len(content) < 2 << 20
    refused(server, content, "big-manifest.zip", 413, "decompressed_too_large", says="manifest.csv")


def test_an_all_zero_manifest(server):
    content = zip_of({"img/0.png": png(), "manifest.csv": b"\x00" * (48 << 20)}, level=9)
    refused(server, content, "zeros.zip", 400, "invalid_content", says="binary")


@pytest.mark.parametrize("on_error", ["fail", "skip"])
def test_an_archive_whose_every_image_is_unreadable(server, on_error):
    content = zip_of({"img/0.png": b"not an image", "img/1.png": b"\x89PNG junk",
                      "manifest.csv": b"image\nimg/0.png\nimg/1.png\n"})
    refused(server, content, f"unreadable-{on_error}.zip", 422, "bad_images", says="not_an_image",
            schema=json.dumps({"on_image_error": on_error}))


def test_parquet_image_bytes_all_unreadable(server):
    table = pa.table({"id": [1, 2], "image": pa.array([b"junk", b"more junk"], type=pa.binary())})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    refused(server, buf.getvalue(), "unreadable.parquet", 422, "bad_images", says="not_an_image")


def test_a_zip_claiming_millions_of_entries_is_refused_from_its_end_record(server):
    out = refused(server, zip64_claiming(4_000_000), "many.zip", 413, "too_many_members", says="4,000,000")
    assert out.seconds < 10


def test_a_zip_understating_its_entries_is_refused_while_walking_the_directory(server):
    content = bytearray(zip_of({f"m/{i}.png": b"x" for i in range(1200)} | {"manifest.csv": MANIFEST}))
    eocd = content.rfind(b"PK\x05\x06")
    struct.pack_into("<HH", content, eocd + 8, 10, 10)  # claims 10 entries
    refused(server, bytes(content), "under.zip", 413, "too_many_members", says="at least 1,001")


def parquet_rows(n_rows: int) -> bytes:
    """An image column of ``n_rows`` rows of the same 4 bytes: a few MB however many rows."""
    table = pa.table({"image": pa.array([b"abcd"] * 1_000_000, type=pa.binary())})
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, table.schema, compression="zstd") as writer:
        for _ in range(n_rows // 1_000_000):
            writer.write_table(table, row_group_size=1_000_000)
    return buf.getvalue()


def test_a_parquet_image_column_of_millions_of_rows_is_refused_from_its_footer(server):
    out = refused(server, parquet_rows(3_000_000), "rows.parquet", 422, "too_many_images", says="3000000")
    assert out.seconds < 10


def test_a_zip_with_a_parquet_manifest_of_millions_of_rows(server):
    content = zip_of({"img/0.png": png(), "manifest.parquet": parquet_rows(3_000_000)})
    refused(server, content, "pq-manifest.zip", 422, "too_many_images", says="3000000")


@pytest.mark.slow
def test_a_parquet_cell_larger_than_a_row_group_may_hold(server):
    table = pa.table({"image": pa.array([b"\x00" * (300 << 20)], type=pa.binary())})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    del table
    content = buf.getvalue()
    assert len(content) < 2 << 20
    refused(server, content, "cell.parquet", 413, "row_group_too_large", says="row_group_size")


def many_page_tiff(pages: int) -> bytes:
    """A little-endian TIFF of ``pages`` 1x1 grey pages sharing one strip (a few bytes per page)."""
    tags = [(256, 3, 1, 1), (257, 3, 1, 1), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 1),
            (273, 4, 1, 8), (277, 3, 1, 1), (278, 3, 1, 1), (279, 4, 1, 1)]
    size = 2 + 12 * len(tags) + 4
    out = bytearray(b"II*\x00" + struct.pack("<I", 16) + b"\x80" + b"\x00" * 7)
    for page in range(pages):
        start = 16 + page * size
        out += struct.pack("<H", len(tags))
        for tag, kind, count, value in tags:
            out += struct.pack("<HHII", tag, kind, count, value)
        out += struct.pack("<I", start + size if page + 1 < pages else 0)
    return bytes(out)


def test_a_tiff_of_a_hundred_thousand_pages(server):
    content = zip_of({"img/0.png": many_page_tiff(100_000), "manifest.csv": MANIFEST})
    out = refused(server, content, "pages.zip", 422, "bad_images", says="too_many_frames")
    assert out.seconds < 10


def test_a_tar_with_an_oversized_pax_header_never_reaches_tarfile(server):
    digits = b"120006 comment=" + b"9" * 119_990 + b"\n"
    buf = io.BytesIO()
    pax = tarfile.TarInfo("././@PaxHeader")
    pax.type, pax.size = tarfile.XHDTYPE, len(digits)
    buf.write(pax.tobuf(format=tarfile.USTAR_FORMAT) + digits + b"\x00" * (-len(digits) % 512))
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in (("img/0.png", png()), ("manifest.csv", MANIFEST)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out = refused(server, buf.getvalue(), "pax.tar", 400, "tar_header_too_large", says="120,006")
    assert out.seconds < 5


def test_an_icon_holding_a_huge_png_is_refused_before_pillow_opens_it(server):
    ihdr = struct.pack(">II5B", 13_000, 13_000, 8, 2, 0, 0, 0)  # 169 M pixels, RGB
    inner = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + b"\x00" * 4 + b"\x00" * 64
    icon = struct.pack("<3H", 0, 1, 1) + struct.pack("<4B2H2I", 0, 0, 0, 0, 1, 32, len(inner), 22) + inner
    content = zip_of({"img/0.png": icon, "manifest.csv": MANIFEST})
    refused(server, content, "icon.zip", 422, "bad_images", says="too_many_pixels")


@pytest.mark.slow
def test_a_16_bit_png_just_under_the_pixel_cap_is_derived_within_the_bound(server):
    buf = io.BytesIO()
    Image.fromarray(np.zeros((7000, 7000), dtype=np.uint16)).save(buf, "PNG")  # I;16, 49 M pixels
    assert len(buf.getvalue()) < 1 << 20
    outcome = attack(server, lambda: upload(server, zip_of({"img/0.png": buf.getvalue(), "manifest.csv": MANIFEST}),
                                            "deep.zip"))
    assert outcome.response.status_code == 201, outcome.response.text[:500]
    assert outcome.peak_mb < PEAK_RSS_BOUND_MB and outcome.healthz_worst_s < HEALTHZ_BOUND_S, outcome
    assert scratch_files(server.data_dir) == []
    print(f"16-bit 7000x7000 PNG: 201 in {outcome.seconds:.1f} s, peak RSS {outcome.peak_mb:.0f} MB")


@pytest.mark.slow
def test_rows_naming_one_member_read_and_derive_it_once(server):
    big = png(1600, seed=3)  # 7.7 MB of noise: a read that costs if repeated per row
    manifest = pd.DataFrame({"image": ["img/0.png"] * 5000, "label": ["a", "b"] * 2500}).to_csv(index=False)
    content = zip_of({"img/0.png": big, "manifest.csv": manifest.encode()}, level=1)
    outcome = attack(server, lambda: upload(server, content, "one-member.zip"))
    assert outcome.response.status_code == 201, outcome.response.text[:500]
    assert outcome.response.json()["n_rows"] == 5000
    assert outcome.peak_mb < PEAK_RSS_BOUND_MB and outcome.healthz_worst_s < HEALTHZ_BOUND_S, outcome
    print(f"5,000 rows naming one 7.7 MB member: 201 in {outcome.seconds:.1f} s, peak {outcome.peak_mb:.0f} MB")
