"""Shape checks on an upload's raw bytes, before any parser holds a whole header or line.

pandas and the ``csv`` module read a header or a line in one piece: a 50 MB column name, a
300 MB cell or a gzip stream of one 3 GB line is in memory, several times over, before any
limit on cells could be checked; a header of 10⁶ columns costs gigabytes once parsed. So the
bytes are scanned first, block by block through the bounded decompressor
(:func:`service.datasets.bounded.open_bounded`):

* :func:`sniff_csv_header` reads only the first record, counting delimiters outside quotes, and
  stops as soon as it passes ``max_columns`` or ``max_line_bytes``;
* :func:`scan_records` reads the whole file once: no record longer than ``max_line_bytes`` and
  no more records than ``max_cells`` allows (every line counts, blank ones too, since even a
  blank line costs the parser a step). Scanning is numpy work on 1 MB blocks, a small fraction
  of what parsing costs, and refuses a bomb before the slow parse starts. It also notes record
  boundaries about every ``CHUNK_BYTES``, so the CSV parser can be fed ranges of bounded size:
  a chunk of ``chunk_cells`` cells could otherwise hold a thousand 1 MB cells (1 GB).

CSV quoting is followed (a quoted newline does not end a record): a byte is inside quotes when
the running count of ``"`` before it is odd, escaped ``""`` included. JSON Lines needs no such
care: a raw newline cannot occur inside a JSON string.
"""
from __future__ import annotations

import contextlib
import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from service.datasets.bounded import UploadLimits, open_bounded, scratch_copy
from service.errors import BadUpload

BLOCK = 1024 * 1024
CHUNK_BYTES = 32 * BLOCK  # most text one parsed chunk holds (plus one block and one record)
HEADER_BLOCK = 64 * 1024  # a header is usually short: read it in small steps
QUOTE, NEWLINE, COMMA = ord('"'), ord("\n"), ord(",")


class RecordScanner:
    """Where records end in a byte stream fed block by block; follows CSV quotes if ``quoted``."""

    def __init__(self, *, quoted: bool, cut_every: int = CHUNK_BYTES) -> None:
        self.quoted = quoted
        self.cut_every = cut_every
        self.inside = False  # within quotes at the end of the last block
        self.open_bytes = 0  # bytes of the record not yet ended
        self.records = 0  # records ended so far
        self.offset = 0  # bytes fed so far
        self.cuts: list[int] = []  # offsets just past a record end, about cut_every apart
        self.first_stop = 0  # offset just past the first record
        self.longest_record = 0  # 1-based number of the longest record of the last block fed

    def outside(self, arr: np.ndarray, block: bytes) -> np.ndarray | None:
        """Mask of the bytes outside quotes; None when the whole block is (no quote in it)."""
        if not self.quoted or (not self.inside and b'"' not in block):
            return None
        parity = np.cumsum(arr == QUOTE, dtype=np.uint8) & 1  # uint8 wraps, parity survives
        if self.inside:
            parity ^= 1
        self.inside = bool(parity[-1])
        return parity == 0

    def feed(self, block: bytes) -> int:
        """Take the next block; return the length of the longest record seen in it (the open one
        included), whose number is then ``longest_record``."""
        arr = np.frombuffer(block, dtype=np.uint8)
        mask = self.outside(arr, block)
        newline = arr == NEWLINE
        ends = np.flatnonzero(newline if mask is None else newline & mask)
        start, self.offset = self.offset, self.offset + len(block)
        if len(ends) == 0:
            self.open_bytes += len(block)
            self.longest_record = self.records + 1
            return self.open_bytes
        if self.records == 0:
            self.first_stop = start + int(ends[0]) + 1
        if start + int(ends[-1]) + 1 - (self.cuts[-1] if self.cuts else 0) >= self.cut_every:
            self.cuts.append(start + int(ends[-1]) + 1)
        before = self.records
        longest, self.longest_record = self.open_bytes + int(ends[0]) + 1, before + 1
        if len(ends) > 1:
            gaps = np.diff(ends)
            at = int(np.argmax(gaps))
            if int(gaps[at]) > longest:
                longest, self.longest_record = int(gaps[at]), before + at + 2
        self.records += len(ends)
        self.open_bytes = len(block) - int(ends[-1]) - 1
        if self.open_bytes > longest:
            longest, self.longest_record = self.open_bytes, self.records + 1
        return longest


@dataclass(frozen=True)
class Scan:
    """What :func:`scan_records` found: ``ranges`` of (start, stop) byte offsets of at most about
    ``CHUNK_BYTES`` each, split at record ends, covering the (decompressed) file."""

    records: int
    ranges: tuple[tuple[int, int], ...]
    first_stop: int  # where the first record (a CSV header) ends


def scan_records(path: Path, gzipped: bool, limits: UploadLimits, filename: str, *, quoted: bool,
                 n_columns: int = 1, header_records: int = 0, copy_to: Path | None = None) -> Scan:
    """Read the file once; 413 for a record over ``max_line_bytes`` or more rows x ``n_columns``
    than ``max_cells``. Counts records (a last one without newline included). With ``copy_to``,
    the (decompressed) bytes are also written there."""
    scanner = RecordScanner(quoted=quoted, cut_every=CHUNK_BYTES)
    with open_bounded(path, gzipped, limits, filename, buffer_size=BLOCK) as fh, \
            (open(copy_to, "wb") if copy_to else contextlib.nullcontext()) as out:
        while block := fh.read(BLOCK):
            if out is not None:
                out.write(block)
            if scanner.feed(block) > limits.max_line_bytes:
                raise limits.line_too_long(filename, scanner.longest_record)
            rows = scanner.records - header_records
            if rows * max(n_columns, 1) > limits.max_cells:
                raise limits.too_many_cells(filename, rows, n_columns)
    total = scanner.records + (scanner.open_bytes > 0)
    limits.check_cells(filename, max(total - header_records, 0), n_columns)
    bounds = [0, *(c for c in scanner.cuts if c < scanner.offset), scanner.offset]
    return Scan(records=total, ranges=tuple(zip(bounds[:-1], bounds[1:])),
                first_stop=scanner.first_stop or scanner.offset)


@contextlib.contextmanager
def scanned(path: Path, gzipped: bool, limits: UploadLimits, filename: str,
            **scan) -> Iterator[tuple[Path, Scan]]:
    """:func:`scan_records`, then the plain file to parse and the scan: a gzipped upload is
    decompressed once, into a copy beside it (removed on leaving), not again by every reader."""
    copy = scratch_copy(path, ".plain") if gzipped else None
    try:
        found = scan_records(path, gzipped, limits, filename, copy_to=copy, **scan)
        yield copy or path, found
    finally:
        if copy is not None:
            copy.unlink(missing_ok=True)


def sniff_csv_header(path: Path, gzipped: bool, limits: UploadLimits, filename: str,
                     delimiter: str = ",") -> list[str]:
    """The CSV header's column names, read in small blocks: 422 past ``max_columns`` (counted on
    the bytes, before the names exist), 413 when the header is longer than ``max_line_bytes``,
    422 for a name longer than ``max_column_name_chars``."""
    scanner, parts, columns = RecordScanner(quoted=True), [], 1
    with open_bounded(path, gzipped, limits, filename, buffer_size=HEADER_BLOCK) as fh:
        while block := fh.read(HEADER_BLOCK):
            arr = np.frombuffer(block, dtype=np.uint8)
            mask = scanner.outside(arr, block)
            newline = arr == NEWLINE if mask is None else (arr == NEWLINE) & mask
            ends = np.flatnonzero(newline)
            stop = int(ends[0]) + 1 if len(ends) else len(block)
            commas = arr[:stop] == (COMMA if delimiter == "," else ord(delimiter))
            columns += int(np.count_nonzero(commas if mask is None else commas & mask[:stop]))
            if columns > limits.max_columns:
                raise limits.too_many_columns(filename, columns, at_least=True)
            parts.append(block[:stop])
            scanner.open_bytes += stop
            if scanner.open_bytes > limits.max_line_bytes:
                raise limits.line_too_long(filename, 1)
            if len(ends):
                break
    names = _parse_header(b"".join(parts), filename, delimiter)
    limits.check_columns(filename, names)
    return names


def _parse_header(raw: bytes, filename: str, delimiter: str = ",") -> list[str]:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise encoding_error(filename, exc, line=1) from None
    try:
        return next(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter), [])
    except csv.Error as exc:
        raise BadUpload(f"File {filename!r} has an unreadable header: {exc}", code="invalid_csv",
                        details={"file": filename, "line": 1}) from None


def encoding_error(filename: str, exc: UnicodeDecodeError, line: int | None = None) -> BadUpload:
    return BadUpload(f"File {filename!r} is not UTF-8 text (byte offset {exc.start}); save it as "
                     "UTF-8.", code="invalid_encoding",
                     details={"file": filename, "byte_offset": exc.start, "line": line})
