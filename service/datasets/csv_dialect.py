"""Which delimiter and decimal mark a CSV upload uses, from its first lines.

Spreadsheets in much of Europe save ``;``-separated files with decimal commas; read with commas, such a
file becomes one column named ``id;label;...`` and fails only at audit time. The first lines are read
(bounded: at most :data:`SAMPLE_BYTES`), each candidate delimiter splits them with the ``csv`` module,
and the one that gives the header several fields and every sampled line as many is chosen. A file no
candidate splits consistently is refused with what was found and how to name the delimiter.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from service.datasets.bounded import UploadLimits, open_bounded
from service.errors import BadUpload

__all__ = ["Dialect", "DELIMITERS", "HOW", "sniff_dialect", "parse_dialect", "delimiter_name"]

SAMPLE_BYTES = 64 * 1024
SAMPLE_LINES = 50
AGREEING = 0.8  # share of the sampled lines that must have the header's number of fields
DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
_BY_NAME = {**{v: k for k, v in DELIMITERS.items()}, **{k: k for k in DELIMITERS}, "\\t": "\t"}
_DECIMAL_COMMA = re.compile(r"^[+-]?\d+,\d+([eE][+-]?\d+)?$")
_DECIMAL_POINT = re.compile(r"^[+-]?\d*\.\d+([eE][+-]?\d+)?$")


@dataclass(frozen=True)
class Dialect:
    delimiter: str = ","
    decimal: str = "."

    def describe(self) -> str:
        decimal = " and decimal commas" if self.decimal == "," else ""
        return f"fields separated by {delimiter_name(self.delimiter)}{decimal}"


def delimiter_name(delimiter: str) -> str:
    return f"{DELIMITERS.get(delimiter, 'character')} ({delimiter!r})"


HOW = ("name the delimiter with the upload's form field 'delimiter' (comma, semicolon, tab or pipe; the CLI's "
       "--delimiter) and, for decimal commas, 'decimal' = ',' (--decimal ,)")


def parse_dialect(delimiter: str | None, decimal: str | None) -> tuple[str | None, str | None]:
    """The user's delimiter and decimal mark (names or characters), validated; None: sniff it."""
    if delimiter is not None and delimiter.strip("\n") not in _BY_NAME:
        raise BadUpload(f"Unknown delimiter {delimiter!r}: use comma, semicolon, tab or pipe.",
                        code="invalid_delimiter", details={"field": "delimiter", "allowed": list(DELIMITERS.values())})
    if decimal is not None and decimal not in (".", ","):
        raise BadUpload(f"Unknown decimal mark {decimal!r}: use '.' or ','.", code="invalid_decimal",
                        details={"field": "decimal", "allowed": [".", ","]})
    return (_BY_NAME[delimiter.strip("\n")] if delimiter is not None else None), decimal


def _sample(path: Path, gzipped: bool, limits: UploadLimits, filename: str) -> list[str]:
    with open_bounded(path, gzipped, limits, filename) as fh:
        raw = fh.read(SAMPLE_BYTES)
    text = raw.decode("utf-8-sig", errors="replace")
    lines = text.splitlines()
    if len(raw) == SAMPLE_BYTES and lines:
        lines = lines[:-1]  # the last line may be cut
    return [line for line in lines[:SAMPLE_LINES] if line.strip()]


def _fields(lines: list[str], delimiter: str) -> list[list[str]]:
    try:
        return list(csv.reader(io.StringIO("\n".join(lines), newline=""), delimiter=delimiter))
    except csv.Error:
        return []


def sniff_dialect(path: Path, gzipped: bool, limits: UploadLimits, filename: str,
                  delimiter: str | None = None, decimal: str | None = None) -> Dialect:
    """The file's dialect; ``delimiter`` and ``decimal`` given by the user win over what is sniffed."""
    lines = _sample(path, gzipped, limits, filename)
    if delimiter is None:
        delimiter = _delimiter(lines, filename)
    if decimal is None:
        decimal = _decimal(_fields(lines[1:], delimiter)) if delimiter != "," else "."
    return Dialect(delimiter=delimiter, decimal=decimal)


def _delimiter(lines: list[str], filename: str) -> str:
    if len(lines) < 1:
        return ","
    found = {}
    for candidate in DELIMITERS:
        records = _fields(lines, candidate)
        if records and len(records[0]) >= 2:
            found[candidate] = records
    consistent = [d for d, records in found.items() if _agree(records)]
    if consistent:  # the one that splits the header most (a ';' file may hold commas inside its values)
        return max(consistent, key=lambda d: (len(found[d][0]), d == ","))
    if not found or list(found) == [","]:
        return ","  # a one-column file, or commas throughout: the row-length check names a short row
    splits = ", ".join(f"{len(records[0])} fields on {delimiter_name(d)}" for d, records in found.items())
    raise BadUpload(
        f"File {filename!r}: could not tell its delimiter: the header splits into {splits}, but no delimiter gives "
        f"most of the first {len(lines)} lines as many fields. Check the file, or {HOW}.",
        code="csv_dialect", details={"file": filename, "header_fields": {DELIMITERS[d]: len(r[0])
                                                                          for d, r in found.items()}})


def _agree(records: list[list[str]]) -> bool:
    """Most sampled lines have the header's number of fields (a short row is then named by the row check)."""
    rows = [r for r in records[1:] if r]
    return not rows or sum(len(r) == len(records[0]) for r in rows) >= AGREEING * len(rows)


def _decimal(records: list[list[str]]) -> str:
    """',' when numbers are written with decimal commas and none with points."""
    comma = point = 0
    for record in records:
        for value in record:
            value = value.strip()
            comma += bool(_DECIMAL_COMMA.match(value))
            point += bool(_DECIMAL_POINT.match(value))
    return "," if comma and not point else "."
