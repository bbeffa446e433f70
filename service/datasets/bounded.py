"""Limits on what an upload may expand to, enforced while the bytes stream in.

The upload cap (``MAX_UPLOAD_MB``) counts the bytes sent; a 10 MB gzip file can expand to
10 GB. So every reader goes through :class:`CountingReader`, which raises a 413 as soon as
more than ``max_decompressed_bytes`` have come out of the decompressor, and the table
readers count rows x columns (``max_cells``) and the longest text cell (``max_cell_chars``)
chunk by chunk, before the next chunk is read. The shape limits (columns, column-name length,
bytes in one line) are checked before any parser sees a whole header or line: see
:mod:`service.datasets.line_scan`.
"""
from __future__ import annotations

import gzip
import io
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from service.errors import BadUpload, InvalidRequest, UploadTooLarge

MB = 1024 * 1024


@dataclass(frozen=True)
class UploadLimits:
    """What one upload may expand to once decompressed and parsed.

    Parameters
    ----------
    max_decompressed_bytes : int
        Bytes of the file after gzip decompression (the plain file's size otherwise).
    max_cells : int
        Rows x columns of the parsed table (a row with no columns counts as one cell).
    max_cell_chars : int
        Characters in one text cell.
    max_columns : int
        Columns of the table (CSV header, JSON keys over all records, Parquet schema).
    max_column_name_chars : int
        Characters in one column name.
    max_line_bytes : int
        Bytes of one CSV record (quoted newlines included) or JSON line, once decompressed.
    """

    max_decompressed_bytes: int = 1024 * MB
    max_cells: int = 20_000_000
    max_cell_chars: int = 1 * MB
    max_columns: int = 2000
    max_column_name_chars: int = 256
    max_line_bytes: int = 8 * MB

    @classmethod
    def from_settings(cls, settings) -> "UploadLimits":
        return cls(max_decompressed_bytes=int(settings.max_decompressed_mb * MB),
                   max_cells=int(settings.max_cells), max_cell_chars=int(settings.max_cell_chars),
                   max_columns=int(settings.max_columns),
                   max_column_name_chars=int(settings.max_column_name_chars),
                   max_line_bytes=int(settings.max_line_bytes))

    def too_many_columns(self, filename: str, n_columns: int, *, at_least: bool = False) -> InvalidRequest:
        count = f"at least {n_columns:,}" if at_least else f"{n_columns:,}"
        return InvalidRequest(
            f"File {filename!r} has {count} columns; the limit is {self.max_columns:,} "
            "(CONTEXTSHIFT_MAX_COLUMNS): drop columns or raise the limit.", code="too_many_columns",
            details={"file": filename, "limit": "CONTEXTSHIFT_MAX_COLUMNS", "max_columns": self.max_columns,
                     "columns_at_least" if at_least else "columns": n_columns})

    def check_columns(self, filename: str, names) -> None:
        """422 past ``max_columns`` columns or for a name longer than ``max_column_name_chars``."""
        if len(names) > self.max_columns:
            raise self.too_many_columns(filename, len(names))
        for name in names:
            if len(str(name)) > self.max_column_name_chars:
                raise self.column_name_too_long(filename, str(name))

    def column_name_too_long(self, filename: str, name: str) -> InvalidRequest:
        return InvalidRequest(
            f"File {filename!r} has a column name of {len(name):,} characters ({name[:40]!r}...); the "
            f"limit is {self.max_column_name_chars:,} (CONTEXTSHIFT_MAX_COLUMN_NAME_CHARS).",
            code="column_name_too_long",
            details={"file": filename, "limit": "CONTEXTSHIFT_MAX_COLUMN_NAME_CHARS",
                     "max_column_name_chars": self.max_column_name_chars, "length": len(name),
                     "name_start": name[:40]})

    def line_too_long(self, filename: str, line: int) -> UploadTooLarge:
        return UploadTooLarge(
            f"File {filename!r}, line {line:,}: longer than {self.max_line_bytes:,} bytes "
            "(CONTEXTSHIFT_MAX_LINE_BYTES); a line holds one record.", code="line_too_long",
            details={"file": filename, "limit": "CONTEXTSHIFT_MAX_LINE_BYTES", "line": line,
                     "max_line_bytes": self.max_line_bytes})

    def too_many_cells(self, filename: str, n_rows: int, n_columns: int) -> UploadTooLarge:
        return UploadTooLarge(
            f"File {filename!r} has more than {self.max_cells:,} cells (rows x columns; at least "
            f"{n_rows:,} rows x {n_columns:,} columns); raise CONTEXTSHIFT_MAX_CELLS or upload a sample.",
            code="too_many_cells",
            details={"file": filename, "limit": "CONTEXTSHIFT_MAX_CELLS", "max_cells": self.max_cells,
                     "rows_at_least": n_rows, "columns": n_columns})

    def check_cells(self, filename: str, n_rows: int, n_columns: int) -> None:
        if n_rows * max(n_columns, 1) > self.max_cells:
            raise self.too_many_cells(filename, n_rows, n_columns)

    def cell_too_large(self, filename: str, column: str, row: int, length: int) -> UploadTooLarge:
        return UploadTooLarge(
            f"File {filename!r}, column {column!r}, row {row}: a cell of {length:,} characters exceeds "
            f"the limit of {self.max_cell_chars:,} (CONTEXTSHIFT_MAX_CELL_CHARS).", code="cell_too_large",
            details={"file": filename, "limit": "CONTEXTSHIFT_MAX_CELL_CHARS", "column": column, "row": row,
                     "max_cell_chars": self.max_cell_chars})

    def too_much_data(self, filename: str) -> UploadTooLarge:
        return UploadTooLarge(
            f"File {filename!r} expands to more than {self.max_decompressed_bytes / MB:g} MB "
            "(CONTEXTSHIFT_MAX_DECOMPRESSED_MB); upload a smaller file.", code="decompressed_too_large",
            details={"file": filename, "limit": "CONTEXTSHIFT_MAX_DECOMPRESSED_MB",
                     "max_decompressed_bytes": self.max_decompressed_bytes})


class _SourceReader(io.RawIOBase):
    """A raw stream over ``self.source``, which it owns: closing it closes the source."""

    source: io.BufferedIOBase  # a binary file, or the gzip stream over one

    def close(self) -> None:
        try:
            self.source.close()
        finally:
            super().close()


class CountingReader(_SourceReader):
    """A raw binary stream over ``source`` that raises once more than ``limit`` bytes were read."""

    def __init__(self, source: io.BufferedIOBase, *, limit: int, on_exceed) -> None:
        super().__init__()
        self.source = source
        self.limit = limit
        self.on_exceed = on_exceed
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        # never ask for more than one byte past the limit: the decompressor cannot run ahead
        want = min(len(buffer), self.limit - self.count + 1)
        data = self.source.read(want)
        self.count += len(data)
        if self.count > self.limit:
            raise self.on_exceed()
        buffer[:len(data)] = data
        return len(data)



class RangeReader(_SourceReader):
    """``prefix``, then the bytes ``[start, stop)`` of a plain file, as a raw stream."""

    def __init__(self, path: Path, start: int, stop: int, prefix: bytes = b"") -> None:
        super().__init__()
        self.source = open(path, "rb")
        self.source.seek(start)
        self.left = stop - start
        self.prefix = prefix

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.prefix:
            data, self.prefix = self.prefix[:len(buffer)], self.prefix[len(buffer):]
        else:
            data = self.source.read(min(len(buffer), self.left))
            self.left -= len(data)
        buffer[:len(data)] = data
        return len(data)



def open_range(path: Path, start: int, stop: int, prefix: bytes = b"", buffer_size: int = MB) -> io.BufferedReader:
    return io.BufferedReader(RangeReader(path, start, stop, prefix), buffer_size=buffer_size)


def open_bounded(path: Path, gzipped: bool, limits: UploadLimits, filename: str,
                 buffer_size: int = MB) -> io.BufferedReader:
    """The (decompressed) bytes of ``path``, buffered, raising a 413 past the decompressed limit."""
    source = gzip.open(path, "rb") if gzipped else open(path, "rb")
    counter = CountingReader(source, limit=limits.max_decompressed_bytes,
                             on_exceed=lambda: limits.too_much_data(filename))
    return io.BufferedReader(counter, buffer_size=buffer_size)


def decompress_to(path: Path, target: Path, limits: UploadLimits, filename: str) -> None:
    """Write the decompressed ``path`` to ``target`` in chunks (Parquet needs a seekable file)."""
    with open_bounded(path, True, limits, filename) as src, open(target, "wb") as out:
        while chunk := src.read(MB):
            out.write(chunk)


def scratch_copy(path: Path, suffix: str) -> Path:
    """A fresh empty file beside ``path`` (an upload's scratch folder, which its instance's lock
    protects), or in the system's temp folder when that is not writable (``/proc/self/fd/<n>``)."""
    try:
        fd, name = tempfile.mkstemp(prefix=f"{path.name}.", suffix=suffix, dir=path.parent)
    except OSError:
        fd, name = tempfile.mkstemp(prefix="contextshift-", suffix=suffix)
    os.close(fd)
    return Path(name)


PARQUET_MAGIC = b"PAR1"


def check_text_start(path: Path, gzipped: bool, limits: UploadLimits, filename: str) -> None:
    """Refuse a file named as text (CSV, JSON Lines) whose first bytes are binary or Parquet."""
    with open_bounded(path, gzipped, limits, filename, buffer_size=8192) as fh:
        raw = fh.read(8192)
    if b"\x00" in raw or raw.startswith(PARQUET_MAGIC):
        raise BadUpload(f"File {filename!r} looks binary, not text: does its extension match "
                        "its content?", code="invalid_content", details={"file": filename})
