"""Where a monitor's production rows come from: files dropped in a folder, or rows of a SQL query.

Each source hands every row over once, as a :class:`Batch`. The directory source
(:mod:`service.monitors.directory_source`) remembers the files it took by path and content
hash; the SQL source (:mod:`service.monitors.sql_source`, its query checked by
:mod:`service.monitors.sql_guard`) remembers the largest ``timestamp_column`` value it has seen.
This module keeps the names the runner and the CLI import.
"""
from __future__ import annotations

from service.monitors.batch import Batch
from service.monitors.directory_source import MAX_FILES_PER_RUN, take_directory
from service.monitors.sql_source import check_sql_definition, decode_watermark, encode_watermark, take_sql

__all__ = ["Batch", "MAX_FILES_PER_RUN", "check_sql_definition", "decode_watermark", "encode_watermark",
           "take_directory", "take_sql"]
