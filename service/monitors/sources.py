"""Where a monitor's production rows come from: files dropped in a folder, or rows of a SQL query.

Every kind of source is a :class:`Source`: ``ready()`` says whether this process can read that
kind of source at all (before a run is stored), ``take()`` hands over the rows not taken before, once,
as a :class:`Batch`. The directory source (:mod:`service.monitors.directory_source`) remembers the
files it took by path and content hash; the SQL source (:mod:`service.monitors.sql_source`, its
query checked by :mod:`service.monitors.sql_guard`) remembers the largest ``timestamp_column`` value
it has seen. What one run may take (:class:`SourceLimits`) comes from the settings of the process
running it and is passed in; no source reads the environment itself. :func:`source_for` is the one
place that picks the kind.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from service.monitors.batch import Batch, Source, SourceLimits

__all__ = ["Batch", "Source", "SourceLimits", "SOURCE_KINDS", "source_for"]

SOURCE_KINDS = ("directory", "sql")


def source_for(definition: Mapping[str, Any], *, limits: SourceLimits, roots: list[Path] | None = None,
               databases: Mapping[str, str] | None = None) -> Source:
    """The source a monitor's ``definition`` (``{"type": "directory" | "sql", ...}``) describes.

    ``roots``: the folders a directory source may read (``CONTEXTSHIFT_MONITOR_ROOTS``); None trusts
    the folder (a ``monitor.yaml`` run by its owner). ``databases``: the configured SQL databases by
    name; None when the definition carries its own ``url`` (``monitor.yaml``).
    """
    kind = definition.get("type")
    if kind == "directory":
        # lazy, like the SQL source below: a cron run imports only the kind of source it reads
        from service.monitors.directory_source import DirectorySource

        return DirectorySource(definition, roots=roots, limits=limits)
    if kind == "sql":
        from service.monitors.sql_source import SqlSource  # lazy: pandas and SQLAlchemy (~0.8 s), SQL only

        url = definition.get("url") if databases is None else databases.get(str(definition.get("database")))
        return SqlSource(definition, url=url, limits=limits)
    raise ValueError(f"unknown monitor source type {kind!r}; one of {list(SOURCE_KINDS)}")
