"""Audits without a server (CLI, monitors): the same reading, roles and validation as the API."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from service import ingest, roles, validation
from service.errors import InvalidRequest, ValidationFailed

Progress = Callable[[float, str], None]


def load_pack(name: str) -> Any:
    from domains import PackError, list_builtin, load_builtin, load_pack_yaml

    if name in list_builtin():
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


def read_dataset(path: str | Path, *, schema: Any, pack: Any) -> tuple[pd.DataFrame, dict[str, str]]:
    """Read, type and validate one file exactly as ``POST /v1/datasets`` would."""
    path = Path(path)
    if not path.is_file():
        raise InvalidRequest(f"File {str(path)!r} does not exist.", code="file_not_found",
                             details={"file": str(path)})
    frame = ingest.read_table(path, path.name)
    column_roles = roles.infer_roles(frame.columns, schema=roles.parse_schema(schema, frame.columns, path.name),
                                     context_columns=[c.name for c in pack.context])
    from service.packs import view

    expectations = validation.schema_expectations(frame, column_roles)
    expectations += validation.pack_expectations(view(pack).expectations, pack.name, frame.columns)
    report = validation.validate(frame, expectations)
    if not report["success"]:
        failures = [r for r in report["results"] if not r["success"]]
        raise ValidationFailed(f"File {path.name!r} failed {len(failures)} data expectation(s); first: "
                               f"{failures[0]['expectation']} on column {failures[0]['column']!r}.",
                               details={"file": path.name, "failures": failures})
    return frame, column_roles


def audit_frames(benchmark: pd.DataFrame, production: pd.DataFrame, *, pack: Any,
                 benchmark_roles: dict[str, str], production_roles: dict[str, str],
                 options: dict[str, Any] | None = None, progress: Progress | None = None,
                 names: tuple[str, str] = ("benchmark", "production"),
                 annotations: tuple[pd.DataFrame, dict[str, str]] | None = None) -> Any:
    from service.pipeline import AuditInput, run_audit
    from service.schemas import AuditOptions

    audit_input = AuditInput(audit_id="local", benchmark=benchmark, production=production,
                             benchmark_roles=benchmark_roles, production_roles=production_roles,
                             benchmark_ref={"id": names[0], "name": names[0]},
                             production_ref={"id": names[1], "name": names[1]}, pack=pack,
                             options=AuditOptions(**(options or {})).model_dump(), annotations=annotations)
    return run_audit(audit_input, progress=progress or (lambda p, s: None))
