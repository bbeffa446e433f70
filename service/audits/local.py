"""Audits without a server (CLI, monitors): the same reading, roles and validation as the API."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from audit import AuditData, AuditOptions, AuditOutcome, run_audit
from audit.run import Progress
from domains import PackError, is_builtin, list_builtin, load_builtin, load_pack_yaml
from service import roles
from service.datasets import frame_checks, ingest
from service.datasets.coerce import coerce_columns
from service.datasets.images.intake import prepare_file
from service.datasets.images.origins import derived_ref
from service.datasets.partitions import read_parts
from service.datasets.paths import is_glob, parquet_files, split_glob
from service.errors import InvalidRequest, audit_input_errors


def load_pack(name: str) -> Any:
    if is_builtin(name):  # a built-in's name or its alias
        return load_builtin(name)
    path = Path(name)
    if path.suffix in (".yaml", ".yml") and path.exists():
        try:
            return load_pack_yaml(path.read_text(encoding="utf-8"))
        except PackError as exc:
            raise InvalidRequest(f"{path}: {exc}", code="invalid_domain_pack") from None
    raise InvalidRequest(f"Unknown domain {name!r}; use one of {list(list_builtin())} or a pack YAML file.",
                         code="unknown_domain", details={"domain": name})


def read_schema(path: str | None) -> Any:
    if not path:
        return None
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidRequest(f"Schema file {path!r} is not readable JSON: {exc}", code="invalid_schema") from None


def read_annotations(path: str | None) -> tuple[pd.DataFrame, dict[str, str]] | None:
    """An annotations table ``(item_id, annotator_id, label)``, read like any upload."""
    if not path:
        return None
    if not Path(path).is_file():
        raise InvalidRequest(f"File {path!r} does not exist.", code="file_not_found", details={"file": path})
    frame = ingest.read_table(Path(path), Path(path).name)
    return frame, roles.infer_roles(frame.columns)


def read_dataset(path: str | Path, *, schema: Any, pack: Any,
                 dialect: tuple[str | None, str | None] = (None, None),
                 provenance: dict[str, Any] | None = None) -> tuple[pd.DataFrame, dict[str, str]]:
    """Read, type and validate one file, Parquet directory or glob exactly as ``POST /v1/datasets``
    (or ``/v1/datasets/register``) would; a file carrying images gets its derived columns first.
    ``dialect``: a CSV's (delimiter, decimal mark) as named by the user; None: sniffed, as on upload.
    ``provenance`` (when given) receives what the audit's reference says of derived columns
    (``derived_context``), as a stored dataset's would."""
    images = prepare_file(path, pack=pack, user_schema=schema)
    if images is not None and provenance is not None:
        provenance.update(derived_ref({"images": images.metadata}))
    if images is not None:
        try:
            frame, _ = read_any(images.path)
        finally:
            images.discard()
        schema, label = images.schema(schema), str(path)
    else:
        frame, label = read_any(path, dialect)
    path = Path(label)
    column_roles = roles.infer_roles(frame.columns, schema=roles.parse_schema(schema, frame.columns, path.name),
                                     context_columns=[c.name for c in pack.context])
    checked = frame_checks.check_frame(frame, pack, column_roles)
    if not checked.ok:  # values outside a declared range are warnings: the audit's notes name their rows
        raise frame_checks.refuse(path.name, checked.report)
    return frame, column_roles


def read_any(path: str | Path, dialect: tuple[str | None, str | None] = (None, None)) -> tuple[pd.DataFrame, str]:
    """A file of any upload format, or every Parquet file of a directory or glob, as one frame."""
    text = str(path)
    if Path(text).is_file():
        return ingest.read_table(Path(text), Path(text).name, dialect=dialect), text
    if not Path(text).is_dir() and not is_glob(text):
        raise InvalidRequest(f"File {text!r} does not exist.", code="file_not_found", details={"file": text})
    # lazy: registration loads SQLAlchemy and the upload path (~0.6 s); only a folder or glob needs it
    from service.datasets.register import common_schema

    files = parquet_files(text)
    base = Path(text) if Path(text).is_dir() else Path(split_glob(text)[0])
    common_schema(files, base)  # every file Parquet, one schema: as registration demands
    return coerce_columns(read_parts(files), text), text


def audit_frames(benchmark: pd.DataFrame, production: pd.DataFrame, *, pack: Any,
                 benchmark_roles: dict[str, str], production_roles: dict[str, str],
                 options: AuditOptions | Mapping[str, Any] | None = None, progress: Progress | None = None,
                 names: tuple[str, str] = ("benchmark", "production"),
                 annotations: tuple[pd.DataFrame, dict[str, str]] | None = None,
                 reference_cache: Any = None,
                 provenance: tuple[dict[str, Any], dict[str, Any]] = ({}, {}),
                 report_images: Any = None, render: bool = True) -> AuditOutcome:
    """One in-memory audit (:func:`audit.run_audit`) of frames read by :func:`read_dataset`;
    ``options`` as given by the caller, validated here; ``reference_cache`` (a ``ReferenceCache``)
    keeps the benchmark-side fits; ``provenance``: each side's :func:`read_dataset` provenance
    (image-derived contexts); ``report_images``: what the images add to the report
    (:func:`service.audits.report_thumbnails.images_for`); ``render=False``: the result only."""
    typed = options if isinstance(options, AuditOptions) else AuditOptions.model_validate(dict(options or {}))
    with audit_input_errors():
        return run_audit(AuditData(benchmark, benchmark_roles, {"id": names[0], "name": names[0], **provenance[0]}),
                         AuditData(production, production_roles, {"id": names[1], "name": names[1], **provenance[1]}),
                         pack=pack, options=typed, progress=progress, annotations=annotations,
                         reference_cache=reference_cache, report_images=report_images, render=render)
