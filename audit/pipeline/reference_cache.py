"""A small cache of benchmark-side ("reference") fitted state, shared by audits and monitor runs.

A monitor audits new rows against the same benchmark again and again; everything fitted on the
benchmark alone (detectors' reference summaries, bootstrap replicates, ...) is the same every
time, so it is computed once and kept here. Generic: values are any picklable objects, keys
are strings from :func:`cache_key`; the audit pipeline builds its keys in
:mod:`audit.pipeline.reference`, other engines can build theirs the same way.

Two levels:

* an in-process LRU of ``max_items`` values (shared by the threads of one service), and
* with a ``directory``, one pickle file per key, so cron runs (one process each) and restarts
  reuse the state. Files are written to a temporary name and renamed (``os.replace``), so a
  reader never sees half a file; an unreadable or corrupt file is a miss (and is removed),
  never an error. The folder keeps at most ``max_files`` files and ``max_bytes`` bytes, the
  least recently used dropped first.

A key must name everything the value depends on: build it from the data's content hash, the
column roles, the versions of the code and libraries that produced it and the options that
shape it (see :func:`cache_key`, :func:`frame_digest`, :func:`source_digest`). Changing
:data:`CACHE_VERSION` invalidates every entry. Pickles execute code when loaded: the folder
must be writable by the service alone (it lives in the service's data directory).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, TypeVar

import pandas as pd

log = logging.getLogger("contextshift.cache")

CACHE_VERSION = 1  # bump when the layout of cached values changes in a way keys do not capture
_MISS = object()
T = TypeVar("T")


def _canonical(value: Any) -> Any:
    """JSON-ready form with a fixed order, so equal parts always give the same key."""
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(v) for v in value), key=repr)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "item"):  # numpy scalars
        return _canonical(value.item())
    return repr(value)


def cache_key(*parts: Any) -> str:
    """sha256 of a canonical JSON of ``parts`` (dicts sorted, tuples as lists) and :data:`CACHE_VERSION`."""
    text = json.dumps([CACHE_VERSION, _canonical(list(parts))], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def frame_digest(frame: Any) -> str:
    """Content hash of a DataFrame: column names, dtypes and every value (not the index)."""
    digest = hashlib.sha256(json.dumps([[str(c), str(t)] for c, t in frame.dtypes.items()]).encode())
    digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def source_digest(*modules: Any) -> str:
    """Hash of the source files of ``modules`` (modules or packages): code changes invalidate keys."""
    digest = hashlib.sha256()
    for module in modules:
        path = Path(module.__file__)
        files = sorted(path.parent.glob("*.py")) if path.name == "__init__.py" else [path]
        for file in files:
            digest.update(file.name.encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()


class ReferenceCache:
    """In-process LRU plus optional pickle files; thread-safe; values must be picklable."""

    def __init__(self, directory: Path | None, max_items: int = 16, max_files: int = 512,
                 max_bytes: int = 4 * 1024 ** 3) -> None:
        self.directory = None if directory is None else Path(directory)
        self.max_items, self.max_files, self.max_bytes = max_items, max_files, max_bytes
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: str, default: Any = None) -> Any:
        """The value for ``key`` (memory, then disk), or ``default``."""
        value = self._lookup(key)
        return default if value is _MISS else value

    def put(self, key: str, value: Any) -> None:
        self._remember(key, value)
        if self.directory is not None:
            self._write(key, value)

    def get_or_compute(self, key: str, compute: Callable[[], T]) -> T:
        """The cached value, or ``compute()`` stored under ``key``. Exceptions are not cached.
        Two threads missing the same key at once both compute; the values are equal."""
        value = self._lookup(key)
        if value is not _MISS:
            return value
        value = compute()
        self.put(key, value)
        return value

    def _lookup(self, key: str) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key]
        value = self._read(key) if self.directory is not None else _MISS
        with self._lock:
            if value is _MISS:
                self.misses += 1
                return _MISS
            self.hits += 1
        self._remember(key, value)
        return value

    def _remember(self, key: str, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def _folder(self) -> Path:
        """The cache's folder; the disk methods run only for a cache that has one."""
        if self.directory is None:
            raise RuntimeError("this reference cache keeps its fits in memory only")
        return self.directory

    def _path(self, key: str) -> Path:
        if not key or not all(c in "0123456789abcdef" for c in key):
            raise ValueError("cache keys are hex digests: build them with cache_key(...)")  # no path tricks
        return self._folder() / f"{key}.pkl"

    def _read(self, key: str) -> Any:
        path = self._path(key)
        try:
            with open(path, "rb") as fh:
                value = pickle.load(fh)
        except OSError:  # absent, or a folder this process cannot read
            return _MISS
        except Exception as exc:  # truncated, corrupt, or pickled by code that no longer exists
            log.warning("reference cache: unreadable %s (%s); recomputing", path.name, type(exc).__name__)
            try:
                path.unlink(missing_ok=True)
            except OSError:
                pass
            return _MISS
        try:
            os.utime(path)  # recently used: kept when the folder is pruned
        except OSError:
            pass
        return value

    def _write(self, key: str, value: Any) -> None:
        """Best effort: a full disk or a read-only folder costs speed, never the audit."""
        try:
            self._folder().mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self._folder(), prefix=f".{key[:16]}.", suffix=".part")
            try:
                with os.fdopen(fd, "wb") as fh:
                    pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(tmp, self._path(key))
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            self._prune()
        except (OSError, pickle.PicklingError, TypeError, AttributeError) as exc:
            log.warning("reference cache: could not store %s (%s: %s)", key[:16], type(exc).__name__, exc)

    def _prune(self) -> None:
        """Drop the least recently used files (reads touch them) beyond ``max_files`` / ``max_bytes``."""
        stats = []
        for path in self._folder().glob("*.pkl"):
            try:
                stat = path.stat()
            except OSError:  # removed by another process meanwhile
                continue
            stats.append((stat.st_mtime, stat.st_size, path))
        stats.sort()
        count, total = len(stats), sum(size for _, size, _ in stats)
        for _, size, path in stats:
            if count <= self.max_files and total <= self.max_bytes:
                break
            path.unlink(missing_ok=True)
            count, total = count - 1, total - size

    def clear(self, *, disk: bool = True) -> None:
        """Forget everything in memory and, with ``disk``, on disk (``disk=False``: as a new process sees it)."""
        with self._lock:
            self._items.clear()
        if disk and self.directory is not None:
            for path in self.directory.glob("*.pkl"):
                path.unlink(missing_ok=True)
