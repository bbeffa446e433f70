"""Settings from environment variables with the ``CONTEXTSHIFT_`` prefix (SPEC §12)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from typing import Annotated


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
    audit_workers: int = Field(default=1, ge=1, description="Audits run at the same time.")

    @field_validator("api_keys", mode="before")
    @classmethod
    def _split_keys(cls, value):
        if isinstance(value, str):
            return [k.strip() for k in value.split(",") if k.strip()]
        return value

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'contextshift.db').resolve()}"

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings; override with ``app.dependency_overrides[get_settings]``."""
    return Settings()
