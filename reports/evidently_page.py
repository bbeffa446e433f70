"""Evidently's own data-drift report as a companion page beside the contextshift report.

Evidently is imported lazily (it is heavy and pulls telemetry): ``DO_NOT_TRACK`` is set to
``"1"`` before the import unless the caller set it. Usage follows ``STACK-NOTES.md``: current
data first, ``save_html`` with a ``str`` path. The page is Evidently's, not ours: several MB of
JavaScript (bundled in the page, nothing is fetched from the network); link to it, do not
inline it.

Escaping. Evidently writes the report data as JSON inside an inline ``<script>`` and does not
escape it for that context, so a column name or category value holding ``</script>`` would end
the script and start markup of the data's choosing (stored XSS on the API's origin).
:func:`escape_inline_json` rewrites that data block with ``<``, ``>``, ``&``, U+2028 and U+2029
as ``\\u`` escapes, which JavaScript reads as the same strings; a page whose data block cannot
be found and checked is refused rather than served unescaped.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

__all__ = ["write_evidently_page", "evidently_page_html", "escape_inline_json", "UnsafePage"]

# Evidently's data block: two one-line JSON documents (json.dumps without indent never emits a
# raw newline, so the newlines in these delimiters cannot come from the data).
_DATA_BLOCK = re.compile(r"<script>\n(\s*)var (metric_[0-9a-f]+) = ([^\n]*);\n"
                         r"(\s*)var additional_graphs_\2 = ([^\n]*);\n</script>")
_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


class UnsafePage(ValueError):
    """Evidently's page did not have the expected data block, so it cannot be made safe."""


def _script_safe(json_text: str) -> str:
    """JSON text that cannot end or open a tag inside ``<script>`` and means the same data.

    In JSON these characters only occur inside strings, where ``\\u003c`` is the same character."""
    safe = re.sub("[<>&\u2028\u2029]", lambda m: _SCRIPT_UNSAFE[m.group(0)], json_text)
    if json.loads(safe) != json.loads(json_text):  # also proves the block was exactly one JSON value
        raise UnsafePage("escaping changed the report data")
    return safe


def escape_inline_json(page: str) -> str:
    """Evidently's HTML ``page`` with its inline JSON data escaped for script context.

    Raises
    ------
    UnsafePage
        When the page has no data block, more than one, or the block is not JSON.
    """
    blocks = list(_DATA_BLOCK.finditer(page))
    if len(blocks) != 1:
        raise UnsafePage(f"expected one Evidently data block, found {len(blocks)}")
    m = blocks[0]
    try:
        info, graphs = _script_safe(m.group(3)), _script_safe(m.group(5))
    except json.JSONDecodeError as err:
        raise UnsafePage(f"the Evidently data block is not JSON ({err.msg})") from None
    block = (f"<script>\n{m.group(1)}var {m.group(2)} = {info};\n"
             f"{m.group(4)}var additional_graphs_{m.group(2)} = {graphs};\n</script>")
    return page[: m.start()] + block + page[m.end():]


def _sample(frame: pd.DataFrame, max_rows: int | None, random_state: int) -> pd.DataFrame:
    if max_rows is None or len(frame) <= max_rows:
        return frame
    return frame.sample(n=max_rows, random_state=random_state)


def write_evidently_page(benchmark: pd.DataFrame, production: pd.DataFrame, *,
                         numerical_columns: Sequence[str], categorical_columns: Sequence[str],
                         path: str | os.PathLike, max_rows: int | None = 100_000,
                         random_state: int = 0) -> Path:
    """Write Evidently's ``DataDriftPreset`` report comparing ``production`` with ``benchmark``.

    Parameters
    ----------
    benchmark, production : DataFrame of shape (n_rows, n_columns)
    numerical_columns, categorical_columns : sequence of str
        Columns to compare; every one must exist in both frames.
    path : path-like
        Output HTML file; written atomically (temporary file, then rename).
    max_rows : int or None
        Each frame is randomly subsampled (seeded) to at most this many rows, because Evidently's
        page grows with the data (about 5 MB at 200k rows); ``None`` keeps every row.

    Returns
    -------
    Path of the written page.
    """
    columns = list(numerical_columns) + list(categorical_columns)
    if not columns:
        raise ValueError("Give at least one numerical or categorical column.")
    for name, frame in (("benchmark", benchmark), ("production", production)):
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"{name} must be a pandas DataFrame, got {type(frame).__name__}.")
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise ValueError(f"{name} has no column(s) {missing[:10]}.")
        if frame.empty:
            raise ValueError(f"{name} has no rows.")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    # lazy: Evidently costs ~4 s to import and only the optional companion page needs it
    from evidently import DataDefinition, Dataset, Report
    from evidently.presets import DataDriftPreset

    definition = DataDefinition(numerical_columns=list(numerical_columns),
                                categorical_columns=list(categorical_columns))
    current = Dataset.from_pandas(_sample(production[columns], max_rows, random_state), data_definition=definition)
    reference = Dataset.from_pandas(_sample(benchmark[columns], max_rows, random_state), data_definition=definition)
    with warnings.catch_warnings():  # Evidently's chi-square divides by zero on unseen categories
        warnings.simplefilter("ignore", RuntimeWarning)
        snapshot = Report([DataDriftPreset()], include_tests=True).run(current, reference)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.tmp")
    snapshot.save_html(str(temporary))  # a str path: Evidently ignores file objects
    try:
        temporary.write_text(escape_inline_json(temporary.read_text(encoding="utf-8")), encoding="utf-8")
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    os.replace(temporary, target)
    return target


def evidently_page_html(benchmark: pd.DataFrame, production: pd.DataFrame, *,
                        numerical_columns: Sequence[str], categorical_columns: Sequence[str],
                        max_rows: int | None = 100_000, random_state: int = 0) -> str:
    """Like :func:`write_evidently_page` but return the page as a string (for callers that
    store it themselves)."""
    with tempfile.TemporaryDirectory(prefix="contextshift-evidently-") as tmp:
        path = write_evidently_page(benchmark, production, numerical_columns=numerical_columns,
                                    categorical_columns=categorical_columns, path=Path(tmp) / "evidently.html",
                                    max_rows=max_rows, random_state=random_state)
        return path.read_text(encoding="utf-8")
