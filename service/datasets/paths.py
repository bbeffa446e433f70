"""Where the service may read a user's files: one rule for registered datasets and monitors.

A path is resolved (symlinks followed, ``..`` collapsed) *before* it is compared with the
allowed roots, so neither ``root/../etc`` nor a symlink inside a root that points elsewhere
gets out. A glob is expanded under its fixed leading directory, which must itself lie inside a
root (nothing outside is even listed), and every match is resolved and checked again: a
pattern cannot escape through ``..`` or through a symlinked file either.

:func:`parquet_files` expands a file, directory or glob the same way without any roots, for
the CLI and the Dask engine, which read what the person running them can read.
"""
from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path

from service.errors import InvalidRequest

GLOB_CHARS = "*?["


@dataclass(frozen=True)
class Roots:
    """The folders a feature may read, and how to name them in errors."""

    paths: tuple[Path, ...]
    setting: str  # e.g. CONTEXTSHIFT_DATA_ROOTS
    disabled_code: str  # the error code when no root is configured
    feature: str  # e.g. "Registering datasets", as in "... is disabled"


@dataclass(frozen=True)
class Resolved:
    """A checked path: ``spec`` is what to store (absolute, resolved), ``files`` what it matched
    (as matched under ``base``: a symlink inside the roots keeps its name, for fingerprints)."""

    spec: str
    base: Path  # the directory, or a glob's fixed leading directory; fingerprints are relative to it
    files: list[Path]


def is_glob(text: str) -> bool:
    return any(ch in text for ch in GLOB_CHARS)


def inside_roots(file: Path, roots: list[Path] | tuple[Path, ...]) -> bool:
    """Is ``file``, after following symlinks, one of ``roots`` or inside one?"""
    real = Path(file).resolve()
    return any(real == root.resolve() or real.is_relative_to(root.resolve()) for root in roots)


def _resolve(path: str | Path, shown: str) -> Path:
    try:
        return Path(path).expanduser().resolve()
    except (ValueError, OSError, RuntimeError):  # NUL bytes, symlink loops, unreadable parents
        raise InvalidRequest(f"Path {shown!r} cannot be resolved.", code="path_not_allowed",
                             details={"path": shown}) from None


def _outside(shown: str, roots: Roots, match: Path | None = None) -> InvalidRequest:
    where = f" (it matches {str(match)!r}, which is outside)" if match is not None else ""
    return InvalidRequest(f"Path {shown!r} is outside the allowed roots ({roots.setting}){where}.",
                          code="path_not_allowed", details={"path": shown, "setting": roots.setting})


def resolve_dir(path: str, roots: Roots) -> Path:
    """``path`` resolved; it must be a root or lie inside one (monitors' directory sources)."""
    if not roots.paths:
        raise InvalidRequest(f"{roots.feature} is disabled: set {roots.setting} to the folders it may read.",
                             code=roots.disabled_code, details={"setting": roots.setting})
    target = _resolve(path, str(path))
    if not inside_roots(target, roots.paths):
        raise _outside(str(path), roots)
    return target


def split_glob(text: str) -> tuple[str, str | None]:
    """``("/data/x", "*/part-*.parquet")`` for ``/data/x/*/part-*.parquet``; no pattern: ``(text, None)``."""
    parts = Path(text).parts
    for index, part in enumerate(parts):
        if is_glob(part):
            return str(Path(*parts[:index])) if index else ".", str(Path(*parts[index:]))
    return text, None


def _visible(relative: Path) -> bool:
    # Spark, Dask and Hive leave _SUCCESS, _metadata, _delta_log/ and .crc files beside the data
    return not any(part.startswith((".", "_")) for part in relative.parts)


def _expand(base: Path, pattern: str | None) -> list[Path]:
    if pattern is not None:
        found = (base / hit for hit in glob.glob(pattern, root_dir=base, recursive=True))
        return sorted(p for p in found if p.is_file())
    if base.is_dir():
        return sorted(p for p in base.rglob("*") if p.is_file() and _visible(p.relative_to(base)))
    return [base] if base.is_file() else []


def _no_files(shown: str) -> InvalidRequest:
    return InvalidRequest(f"Path {shown!r} matches no files.", code="no_files", details={"path": shown})


def resolve_inside(path_or_glob: str, roots: Roots) -> Resolved:
    """The files a directory, file or glob names; every one must resolve inside a root.

    Raises a 422 naming the rule: no roots configured, a path or match outside them
    (``..``, symlinks), or nothing matched.
    """
    text = str(path_or_glob)
    if "\x00" in text or not text.strip():
        raise InvalidRequest("The path is empty or contains NUL.", code="path_not_allowed", details={"path": text})
    fixed, pattern = split_glob(text)
    base = resolve_dir(fixed, roots)
    files = _expand(base, pattern)
    if not files:
        raise _no_files(text)
    for file in files:
        if not inside_roots(file, roots.paths):
            raise _outside(text, roots, file)
    spec = str(base / pattern) if pattern is not None else str(base)
    return Resolved(spec=spec, base=base.parent if base.is_file() else base, files=files)


def parquet_files(path_or_glob: str | Path) -> list[Path]:
    """The files of a file, a directory (recursively, skipping ``.``/``_`` names) or a glob.

    No roots apply: for the CLI and the Dask engine, run by the person who owns the files.
    """
    text = str(path_or_glob)
    fixed, pattern = split_glob(text)
    files = _expand(Path(fixed).expanduser(), pattern)
    if not files:
        raise InvalidRequest(f"Path {text!r} matches no files.", code="file_not_found", details={"file": text})
    return files
