"""Where a monitor's production rows come from: files dropped in a folder, or rows of a SQL query.

Each source hands every row over once. A directory source remembers the files it took by path
and content hash (a file rewritten with new content is taken again); a SQL source remembers
the largest ``timestamp_column`` value it has seen (the watermark) and takes only rows after it,
so rows must arrive with increasing timestamps (a row inserted later with an older timestamp
than the watermark is never taken).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from service.paths import inside_roots

MAX_FILES_PER_RUN = 1000


@dataclass(frozen=True)
class Batch:
    """New rows for one run, and what to remember once the run has taken them."""

    frame: pd.DataFrame | None
    files: list[tuple[str, str]] = field(default_factory=list)  # (path, sha256)
    watermark: str | None = None  # JSON-encoded, for SQL sources
    description: str = ""

    @property
    def empty(self) -> bool:
        return self.frame is None or len(self.frame) == 0


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def take_directory(source: dict[str, Any], taken: set[tuple[str, str]], roots: list[Path] | None) -> Batch:
    """Files matching the pattern that were not taken before; ``roots=None`` trusts the folder (CLI)."""
    from service import ingest

    folder = Path(source["path"])
    frames, files = [], []
    for path in sorted(folder.glob(source.get("pattern") or "*.csv")):
        if not path.is_file() or path.name.startswith("."):
            continue
        if roots is not None and not inside_roots(path, roots):
            continue  # a symlink leading out of the allowed roots
        digest = _sha256(path)
        if (str(path), digest) in taken:
            continue
        frames.append(ingest.read_table(path, path.name))
        files.append((str(path), digest))
        if len(files) >= MAX_FILES_PER_RUN:
            break
    if not frames:
        return Batch(frame=None)
    frame = pd.concat(frames, ignore_index=True)
    return Batch(frame=frame, files=files, description=f"{len(files)} file(s) from {folder.name}")


def encode_watermark(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, (pd.Timestamp, datetime, date)):
        return json.dumps({"type": "datetime", "value": pd.Timestamp(value).isoformat()})
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, (int, float)):
        return json.dumps({"type": "number", "value": value})
    return json.dumps({"type": "text", "value": str(value)})


def decode_watermark(text: str | None) -> Any:
    if not text:
        return None
    data = json.loads(text)
    if data["type"] == "datetime":
        return pd.Timestamp(data["value"]).to_pydatetime()
    return data["value"]


def take_sql(source: dict[str, Any], url: str, watermark: str | None, *, max_rows: int = 5_000_000) -> Batch:
    """Rows of the user's query newer than the watermark, oldest first."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url, pool_pre_ping=True)
    try:
        column = engine.dialect.identifier_preparer.quote(source["timestamp_column"])
        inner = source["query"].strip().rstrip(";")
        where = f" WHERE q.{column} > :watermark" if watermark else ""
        sql = text(f"SELECT * FROM ({inner}) AS q{where} ORDER BY q.{column} LIMIT {int(max_rows)}")
        params = {"watermark": decode_watermark(watermark)} if watermark else {}
        with engine.connect() as conn:
            frame = pd.read_sql(sql, conn, params=params)
    finally:
        engine.dispose()
    if frame.empty:
        return Batch(frame=None)
    if source["timestamp_column"] not in frame.columns:
        raise KeyError(f"the query returns no column {source['timestamp_column']!r}")
    mark = encode_watermark(frame[source["timestamp_column"]].max())
    return Batch(frame=frame, watermark=mark, description=f"{len(frame)} row(s) from the SQL query")
