"""Request and response bodies of ``/v1/datasets``."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

ColumnRole = Literal["id", "feature", "context", "label", "prediction", "score", "embedding", "text",
                     "timestamp", "annotator", "ignore"]


class ColumnOut(BaseModel):
    name: str
    role: ColumnRole
    dtype: str
    source: str | None = Field(default=None, description=(
        "Where the role came from: schema (given in the upload's schema or by PATCH), domain pack (a context the "
        "pack names), inferred from name (a naming convention: label, prediction, score, proba_<class>...), "
        "default (a feature: no rule matched). Inferred roles are inferred again under the audit's pack."))


class ColumnSource(BaseModel):
    """Where one column of an image upload came from."""

    column: str = Field(description="A column name; emb_* stands for the appearance embedding's columns.")
    source: Literal["derived_from_image", "user_metadata"]
    extractor: str | None = Field(default=None, description="The imagecontext extractor that derived it.")
    extractor_version: str | None = Field(default=None, description="imagecontext.EXTRACTOR_VERSION.")
    derived_from: str | None = Field(default=None, description="A pack context: the image value it was mapped from "
                                                                "by the pack's derived: block.")
    feeds_context: list[str] = Field(default_factory=list, description="The pack contexts this column gives.")


class ImageDerivation(BaseModel):
    """What an upload carrying images derived from them."""

    source: str = Field(description="The file (and manifest) the images came from.")
    n_images: int
    extractor_version: str
    derived_context: list[str] = Field(default_factory=list, description="Pack contexts derived from image values.")
    columns: list[ColumnSource] = Field(default_factory=list)
    skipped_rows: list[dict[str, Any]] = Field(default_factory=list, description='Rows skipped under '
                                               '"on_image_error": "skip", with the error.')
    on_image_error: Literal["fail", "skip"] | None = Field(default=None, description="Registered datasets of image "
                                                           "paths: what an audit does with an unreadable image.")
    derived_at: Literal["upload", "audit"] = Field(default="upload", description="When the images are read: at "
                                                   "upload, or (registered datasets) by each Dask audit, on its "
                                                   "workers.")


class ValidationOut(BaseModel):
    success: bool
    results: list[dict[str, Any]]
    rows_checked: int | None = Field(default=None, description="Rows the expectations ran on: every row of an "
                                     "upload, the first row groups of a registered dataset.")
    warnings: list[dict[str, Any]] = Field(default_factory=list, description="Data-quality warnings that do not "
                                           "refuse the data: values outside a context's declared range, with the "
                                           "first 20 rows (ids, else row numbers) and their count.")
    images: ImageDerivation | None = Field(default=None, description="Uploads carrying images: which columns were "
                                           "derived from the images (extractor and version) and which are the "
                                           "user's, and the pack contexts each feeds.")


class DatasetOut(BaseModel):
    id: str
    name: str
    role: Literal["benchmark", "production", "annotations"]
    domain: str | None
    n_rows: int
    n_columns: int
    columns: list[ColumnOut]
    validation: ValidationOut
    sha256: str = Field(description="Uploads: of the file's bytes. Registered: a fingerprint of the files' "
                                    "relative paths, sizes and Parquet footers.")
    created_at: datetime
    storage: Literal["copied", "registered"] = Field(
        default="copied", description="copied: stored by the service as Parquet parts; registered: the user's "
                                      "files, read in place and never deleted by the service.")
    n_partitions: int = Field(default=1, description="Parquet files holding the rows.")
    registered_path: str | None = Field(default=None, description="Registered datasets: the resolved directory "
                                                                  "or glob of the files.")
    warnings: list[str] = Field(default_factory=list, description=(
        "What the audit will miss with these roles: a benchmark with no label, a dataset with no model output "
        "(prediction or score), each naming the likely columns and how to give them their role."))

    @classmethod
    def from_row(cls, row: Any) -> "DatasetOut":
        out = cls.model_validate(row, from_attributes=True)
        if out.storage == "registered":
            out.registered_path = row.path
        out.warnings = [str(w) for w in ((row.validation or {}).get("role_warnings") or [])]
        return out


class DatasetRolesPatch(BaseModel):
    """New roles for some columns of a stored dataset; audits started after it use them."""

    model_config = {"extra": "forbid"}

    columns: dict[str, str] = Field(description='{"<column>": "<role>"}: roles are those of an upload\'s schema.',
                                    min_length=1)


class DatasetRegister(BaseModel):
    """Register Parquet files inside CONTEXTSHIFT_DATA_ROOTS as a dataset, without copying them."""

    model_config = {"extra": "forbid", "populate_by_name": True}

    name: str = Field(min_length=1, max_length=255)
    role: Literal["benchmark", "production", "annotations"]
    domain: str | None = Field(default=None, min_length=1, max_length=64)
    columns_schema: dict[str, Any] | None = Field(default=None, alias="schema",
                                                  description='{"columns": {"<column>": "<role>"}}')
    path: str = Field(min_length=1, max_length=4096,
                      description="A Parquet file, a directory of them (recursively; names starting with '.' or '_' "
                                  "are skipped) or a glob such as /data/events/2024-*/*.parquet.")


class DatasetList(BaseModel):
    items: list[DatasetOut]
