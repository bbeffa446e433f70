"""Datasets: upload (streamed to Parquet parts, validated, stored atomically), register in place,
list, get, delete."""
from __future__ import annotations

import json
import uuid
from typing import Annotated

import pyarrow.parquet as pq
from fastapi import APIRouter, File, Form, Query, Response, UploadFile, status

from audit.role_hints import upload_warnings
from service.datasets import ingest
from service.datasets.csv_dialect import parse_dialect
from service.datasets.deps import DatasetsDep
from service.datasets.register import register_dataset as register
from service.datasets.schemas import DatasetList, DatasetOut, DatasetRegister, DatasetRolesPatch
from service.datasets.upload import store_upload
from service.deps import RuntimeDep
from service.errors import Conflict, InvalidRequest
from service.packs.store import resolve_pack
from service.roles import parse_schema, roles_for_audit, schema_differs, with_roles
from service.schemas import ERROR_RESPONSES

router = APIRouter(prefix="/v1/datasets", tags=["datasets"], responses=ERROR_RESPONSES)
DATASET_ROLES = ("benchmark", "production", "annotations")
MAX_OFFSET = 1_000_000_000  # far past any real listing; keeps the SQL OFFSET inside int64


@router.post("", response_model=DatasetOut, status_code=status.HTTP_201_CREATED,
             responses={200: {"model": DatasetOut, "description": "Same name and content: existing dataset"}})
def upload_dataset(
    runtime: RuntimeDep,
    response: Response,
    file: Annotated[UploadFile, File(description="CSV, Parquet or JSON Lines, optionally .gz")],
    name: Annotated[str, Form(min_length=1, max_length=255)],
    role: Annotated[str, Form(description="benchmark, production or annotations")],
    domain: Annotated[str | None, Form()] = None,
    schema_text: Annotated[str | None, Form(alias="schema",
                                            description='JSON: {"columns": {"<column>": "<role>"}}')] = None,
    delimiter: Annotated[str | None, Form(description="CSV: comma, semicolon, tab or pipe; default: sniffed from "
                                                      "the first lines")] = None,
    decimal: Annotated[str | None, Form(description="CSV: '.' or ','; default: ',' when the fields are not "
                                                    "comma-separated and numbers have decimal commas")] = None,
) -> DatasetOut:
    """Upload a table. Bad input answers 4xx and stores nothing."""
    filename = file.filename or "upload"
    _check_text_field("name", name)
    _check_text_field("domain", domain)
    if role not in DATASET_ROLES:
        raise InvalidRequest(f"Unknown dataset role {role!r}; use 'benchmark', 'production' or 'annotations'.",
                             code="invalid_role", details={"field": "role", "allowed": list(DATASET_ROLES)})
    user_schema = _parse_schema_field(schema_text)
    dialect = parse_dialect(delimiter, decimal)
    pack = resolve_pack(runtime, domain) if domain else None
    ingest.detect_format(filename)
    store = runtime.datasets
    store.tmp_dir.mkdir(parents=True, exist_ok=True)
    spooled = store.tmp_dir / f"upload-{uuid.uuid4().hex}"
    try:
        sha256, _ = ingest.spool_to_disk(file.file, spooled, max_bytes=runtime.settings.max_upload_bytes,
                                         filename=filename)
        existing = store.find_duplicate(name, sha256)
        if existing is not None:
            _same_roles(existing, user_schema)
            response.status_code = status.HTTP_200_OK
            return DatasetOut.from_row(existing)
        row, created = store_upload(runtime, spooled, filename=filename, name=name, role=role, pack=pack,
                                    user_schema=user_schema, sha256=sha256, dialect=dialect)
    finally:
        spooled.unlink(missing_ok=True)
    if not created:  # a parallel upload of the same name and content won the race
        response.status_code = status.HTTP_200_OK
    return DatasetOut.from_row(row)


@router.post("/register", response_model=DatasetOut, status_code=status.HTTP_201_CREATED,
             responses={200: {"model": DatasetOut, "description": "Same name and files: existing dataset"}})
def register_dataset(runtime: RuntimeDep, response: Response, body: DatasetRegister) -> DatasetOut:
    """Register Parquet files inside CONTEXTSHIFT_DATA_ROOTS as a dataset without copying them.
    Deleting the dataset later removes only its catalogue row, never the files."""
    _check_text_field("name", body.name)
    _check_text_field("domain", body.domain)
    pack = resolve_pack(runtime, body.domain) if body.domain else None
    row, created = register(runtime, name=body.name, role=body.role, pack=pack, user_schema=body.columns_schema,
                            path=body.path)
    if not created:
        response.status_code = status.HTTP_200_OK
    return DatasetOut.from_row(row)


def _same_roles(existing, user_schema) -> None:
    """An upload of stored content under its name returns the stored dataset, unless its schema asks for
    other roles: then 409, saying how to change them (a silent 200 would keep the old roles)."""
    if user_schema is None:
        return
    names = [str(c["name"]) for c in existing.columns]
    differ = schema_differs(existing.columns, parse_schema(user_schema, names, existing.name))
    if not differ:
        return
    listed = ", ".join(f"'{c}' is stored as {old}, the schema says {new}" for c, (old, new) in list(differ.items())[:5])
    patch = {"columns": {c: new for c, (_, new) in differ.items()}}
    raise Conflict(f"Dataset {existing.id!r} holds this file under the name {existing.name!r} with other roles "
                   f"({listed}). Change its roles with PATCH /v1/datasets/{existing.id} and the body "
                   f"{json.dumps(patch)}, or upload under another name.", code="roles_differ",
                   details={"dataset": existing.id, "differ": {c: {"stored": o, "schema": n}
                                                               for c, (o, n) in differ.items()}, "patch": patch})


def _check_text_field(field: str, value: str | None) -> None:
    if value is not None and any(ord(ch) < 32 for ch in value):  # NUL breaks PostgreSQL text
        raise InvalidRequest(f"Field {field!r} contains control characters.", code="invalid_field",
                             details={"field": field})


def _parse_schema_field(schema: str | None):
    if schema is None or not schema.strip():
        return None
    try:
        return json.loads(schema)
    except json.JSONDecodeError as exc:
        raise InvalidRequest(f"Field 'schema' is not valid JSON: {exc.msg} at position {exc.pos}.",
                             code="invalid_schema", details={"field": "schema", "position": exc.pos}) from None
    except RecursionError:  # the decoder's depth check; a schema is two levels deep
        raise InvalidRequest("Field 'schema' is nested too deeply.", code="invalid_schema",
                             details={"field": "schema"}) from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise InvalidRequest(f"Field 'schema' is not valid JSON: {exc}", code="invalid_schema",
                             details={"field": "schema"}) from None


@router.get("", response_model=DatasetList)
def list_datasets(store: DatasetsDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                  offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0) -> DatasetList:
    return DatasetList(items=[DatasetOut.from_row(r) for r in store.list(limit=limit, offset=offset)])


@router.get("/{dataset_id}", response_model=DatasetOut)
def get_dataset(dataset_id: str, store: DatasetsDep) -> DatasetOut:
    return DatasetOut.from_row(store.get(dataset_id))


@router.patch("/{dataset_id}", response_model=DatasetOut)
def change_roles(dataset_id: str, body: DatasetRolesPatch, store: DatasetsDep) -> DatasetOut:
    """Change some columns' roles (validated like an upload's schema); audits started after this use them.
    Audits already stored keep the roles they ran with."""
    row = store.get(dataset_id)
    changes = parse_schema({"columns": body.columns}, [str(c["name"]) for c in row.columns], row.name)
    columns = with_roles(row.columns, changes)
    validation = dict(row.validation or {})
    if row.role in ("benchmark", "production"):
        validation["role_warnings"] = upload_warnings(_first_rows(store, dataset_id), roles_for_audit(columns),
                                                      row.role)
    return DatasetOut.from_row(store.set_columns(dataset_id, columns, validation))


def _first_rows(store, dataset_id: str):
    """The first row group of the first part: enough values to suggest label and output columns."""
    files = store.dataset_files(dataset_id)
    parquet = pq.ParquetFile(files[0])
    if not parquet.num_row_groups:
        return parquet.schema_arrow.empty_table().to_pandas()
    return parquet.read_row_group(0).to_pandas()


@router.delete("/{dataset_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_dataset(dataset_id: str, store: DatasetsDep) -> Response:
    store.delete(dataset_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
