"""The benchmark side of ``contextshift monitor run --config``, worked out once per benchmark file.

Each cron run is a new process, and all a run needs of the benchmark besides its rows is the
same every time: the file's validation (Great Expectations over every row), its column roles and
its content hash (the reference cache's key). They are kept in the monitor's state file under
``benchmark``, keyed by the file's path, size and modification time and by the schema and pack,
so a run with new rows only reads the file again. Within one process (a scheduler that calls
:func:`service.monitors.local.run_config` in a loop, the over-time benchmark) the frame itself
is kept too. A benchmark that is a folder, a glob or carries images is worked out every run.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from audit.pipeline.reference_cache import frame_digest
from service.audits import local as audit_local  # a module: tests count its read_dataset calls
from service.datasets.images.intake import prepare_file
from service.monitors.run_path import BenchmarkSide

_FRAMES: OrderedDict[str, Any] = OrderedDict()  # memo key -> frame, this process
_FRAMES_KEPT = 2
_LOCK = threading.Lock()


def _memo_key(config: dict[str, Any], pack: Any) -> str | None:
    path = Path(config["benchmark"])
    if not path.is_file():
        return None
    info = path.stat()
    schema = config.get("benchmark_schema")
    schema_stamp = Path(schema).stat().st_mtime_ns if schema and Path(schema).is_file() else None
    return repr((str(path), info.st_size, info.st_mtime_ns, schema, schema_stamp, pack.name,
                 getattr(pack, "version", None)))


def _remember(key: str, frame: Any) -> None:
    with _LOCK:
        _FRAMES[key] = frame
        _FRAMES.move_to_end(key)
        while len(_FRAMES) > _FRAMES_KEPT:
            _FRAMES.popitem(last=False)


def benchmark_side(config: dict[str, Any], state: dict[str, Any]) -> BenchmarkSide:
    """The benchmark's frame, roles, pack and digest; updates ``state["benchmark"]`` (saved with the run)."""
    pack = audit_local.load_pack(config.get("domain") or "generic")
    ref = {"id": "benchmark", "name": config["benchmark"]}
    key = _memo_key(config, pack)
    memo = state.get("benchmark") or {}
    if key is not None and memo.get("key") == key:
        with _LOCK:
            frame = _FRAMES.get(key)
        if frame is None:
            # typed as at upload; validated when the memo was made
            frame, _ = audit_local.read_any(config["benchmark"])
            _remember(key, frame)
        return BenchmarkSide(frame=frame, roles=dict(memo["roles"]), ref=ref, pack=pack, digest=memo["digest"])
    schema = audit_local.read_schema(config.get("benchmark_schema"))
    # validates, raises on failure
    frame, roles = audit_local.read_dataset(config["benchmark"], schema=schema, pack=pack)
    if key is None or _has_images(config["benchmark"], pack, schema):
        return BenchmarkSide(frame=frame, roles=roles, ref=ref, pack=pack)
    digest = frame_digest(frame)
    state["benchmark"] = {"key": key, "roles": roles, "digest": digest}
    _remember(key, frame)
    return BenchmarkSide(frame=frame, roles=roles, ref=ref, pack=pack, digest=digest)


def _has_images(path: str, pack: Any, schema: Any) -> bool:
    """A file whose images are turned into derived columns at each read is not memoised."""
    images = prepare_file(path, pack=pack, user_schema=schema)
    if images is None:
        return False
    images.discard()
    return True
