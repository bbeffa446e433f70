"""Settings from environment variables with the ``CONTEXTSHIFT_`` prefix."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class Settings(BaseSettings):
    """Service configuration; every field can be set as ``CONTEXTSHIFT_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="CONTEXTSHIFT_", extra="ignore")

    data_dir: Path = Field(default=Path("data"), description="Uploaded data (Parquet) and reports.")
    database_url: str | None = Field(
        default=None, description="SQLAlchemy URL; default: SQLite file under data_dir."
    )
    api_keys: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Comma-separated bearer keys; empty disables auth."
    )
    max_upload_mb: float = Field(default=512, gt=0)
    max_decompressed_mb: float = Field(default=1024, gt=0, description="An upload's size once decompressed.")
    max_cells: int = Field(default=20_000_000, ge=1, description="Rows x columns of an uploaded table.")
    max_cell_chars: int = Field(default=1024 * 1024, ge=1, description="Characters in one text cell.")
    max_columns: int = Field(default=2000, ge=1, description="Columns of an uploaded table (checked on the "
                             "header or Parquet footer, before any row is parsed).")
    max_column_name_chars: int = Field(default=256, ge=1, description="Characters in one column name.")
    max_line_bytes: int = Field(default=8 * 1024 * 1024, ge=1, description="Bytes of one CSV/JSON Lines line "
                                "once decompressed; at least max_cell_chars (a longest cell fits in a line).")
    max_queued_audits: int = Field(default=100, ge=1, description="Audits waiting to run; past it POST "
                                   "/v1/audits answers 429 with Retry-After.")
    max_pack_kb: float = Field(default=1024, gt=0, description="Size of a posted domain pack (YAML).")
    audit_lease_s: float = Field(default=60, gt=0, description="An instance silent this long loses its audits.")
    audit_workers: int = Field(default=1, ge=1, description="Audits run at the same time.")
    scheduler: bool = Field(default=True, description="Run monitors on schedule here (off: API-only replica).")
    monitor_workers: int = Field(default=2, ge=1, description="Monitor runs executed at the same time (runs "
                                 "of different monitors; one monitor never runs twice at once).")
    monitor_run_lease_s: float = Field(default=60, gt=0, description="A monitor run whose process has not "
                                       "sent a heartbeat for this long is failed as interrupted.")
    webhook_allow_private: bool = Field(default=False, description="Let monitor webhooks reach loopback and "
                                        "private addresses (on-premise receivers); metadata stays refused.")
    webhook_retry_s: float = Field(default=30, gt=0, description="First wait before an undelivered webhook "
                                   "message is tried again (doubling, at most an hour).")
    monitor_roots: Annotated[list[Path], NoDecode] = Field(
        default_factory=list, description="Comma-separated folders directory monitors may read; none: refused.")
    monitor_databases: dict[str, str] = Field(
        default_factory=dict, description='JSON {"name": "SQLAlchemy URL"} that SQL monitors may query.')
    monitor_min_interval_s: float = Field(default=60, gt=0, description="Shortest monitor interval accepted.")
    monitor_query_timeout_s: float = Field(default=30, gt=0, description="A SQL monitor's query is cancelled "
                                           "after this long (the run fails with kind 'timeout').")
    monitor_max_rows_per_run: int = Field(default=5_000_000, ge=1, description="Rows one monitor run takes; "
                                          "the rest (files or newer rows) wait for the next run.")
    monitor_max_bytes_per_run: int = Field(default=1024**3, ge=1, description="File bytes one directory "
                                           "monitor run reads; the remaining files wait for the next run.")
    max_pack_slices: int = Field(default=500, ge=1, description="Slices in one domain pack.")
    max_expression_terms: int = Field(default=200, ge=1, description="Terms (comparisons, memberships, "
                                      "tests) in one slice expression.")
    max_expression_chars: int = Field(default=4000, ge=1, description="Characters in one slice expression.")
    reference_cache: bool = Field(default=True, description="Keep benchmark-side fitted state under "
                                  "data_dir/cache/reference, so monitor runs and repeated audits skip the fit "
                                  "(off: fit every time; results are the same).")
    data_roots: Annotated[list[Path], NoDecode] = Field(
        default_factory=list, description="Comma-separated folders whose Parquet files may be registered as "
                                          "datasets without copying; none: registration refused.")
    partition_rows: int = Field(default=1_000_000, ge=1, description="Most rows in one stored Parquet part.")
    upload_chunk_cells: int = Field(default=1_000_000, ge=1, description="Rows x columns of an upload read, "
                                    "validated and written at a time: what bounds an upload's memory.")
    engine: Literal["pandas", "dask"] = Field(default="pandas", description="Where audits compute: in memory "
                                              "(pandas) or from partition summaries on a Dask cluster.")
    dask_scheduler: str | None = Field(default=None, description="dask.distributed scheduler address; default: "
                                       "a local cluster sized to the machine.")
    max_image_pixels: int = Field(default=50_000_000, ge=1, description="Pixels (width x height) of one "
                                  "uploaded image, checked from its header before decoding.")
    max_image_bytes: int = Field(default=50 * 1024 * 1024, ge=1, description="Bytes of one encoded image.")
    max_images: int = Field(default=70_000, ge=1, description="Images in one upload (counted on the manifest "
                            "before any image is read). Each image adds about 150 columns, so rows x columns "
                            "must also fit max_cells: 70,000 images with up to 130 columns of their own do.")
    max_archive_members: int = Field(default=200_000, ge=1, description="Members of an uploaded .zip/.tar "
                                     "(counted from the archive's headers).")
    max_image_uploads: int = Field(default=2, ge=1, description="Image uploads deriving at the same time in "
                                   "one process; with image_workers, bounds the child processes.")
    image_workers: int = Field(default=0, ge=0, description="Child processes one image upload derives with "
                               "(0: one per core).")
    image_upload_wait_s: float = Field(default=60, ge=0, description="How long an image upload waits for a "
                                       "free derivation slot before answering 429.")
    monitor_max_value_bytes: int = Field(default=1024 * 1024, ge=1, description="Bytes of one value a SQL "
                                         "monitor's query may return (checked by the database, before the value "
                                         "is sent).")
    monitor_max_sql_bytes_per_run: int = Field(default=256 * 1024 * 1024, ge=1, description="Value bytes one "
                                               "SQL monitor run reads; newer rows wait for the next run.")
    api_keys_read: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Comma-separated keys with the read role (results, reports, pages, "
                                          "metrics).")
    api_keys_audit: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Comma-separated keys with the audit role (read, plus uploads, "
                                          "audits and rounds).")
    api_keys_file: Path | None = Field(default=None, description="A file of keys with roles, one '<role> <key>' "
                                       "per line ('#' starts a comment); read at start-up.")

    @field_validator("api_keys", "api_keys_read", "api_keys_audit", mode="before")
    @classmethod
    def _split_keys(cls, value, info):
        if isinstance(value, str):
            keys = [k.strip() for k in value.split(",")] if value else []
            if not all(keys):
                # " , " or "key," is a typo, not a wish to turn auth off: refuse to start
                raise ValueError(f"CONTEXTSHIFT_{info.field_name.upper()} has an empty key; give comma-separated "
                                 "keys, or leave it unset (empty).")
            return keys
        return value

    @field_validator("monitor_roots", "data_roots", mode="before")
    @classmethod
    def _split_roots(cls, value):
        if isinstance(value, str):
            return [Path(p.strip()) for p in value.split(",") if p.strip()]
        return value

    @model_validator(mode="after")
    def _line_holds_a_cell(self):
        if self.max_line_bytes < self.max_cell_chars:  # a cell the line limit would always refuse first
            raise ValueError(f"CONTEXTSHIFT_MAX_LINE_BYTES ({self.max_line_bytes}) is below "
                             f"CONTEXTSHIFT_MAX_CELL_CHARS ({self.max_cell_chars}); raise it.")
        return self

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'contextshift.db').resolve()}"

    @property
    def keys_configured(self) -> bool:
        """Whether any API key is set (then every ``/v1/*`` call and ``/metrics`` need one)."""
        return bool(self.api_keys or self.api_keys_read or self.api_keys_audit or self.api_keys_file)

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings; override with ``app.dependency_overrides[get_settings]``."""
    return Settings()
