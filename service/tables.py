"""Every table of the service in one metadata: what Alembic compares the migrations with.

Each resource keeps its tables in its own module; importing them here (and nowhere else for
registration's sake) puts them all on :data:`service.orm.Base.metadata` without an import cycle.
"""
from __future__ import annotations

from service import models as _core  # noqa: F401  (datasets, audits, packs, instances)
from service.monitors import models as _monitors  # noqa: F401  (monitors, runs, files, alerts, outbox)
from service.orm import Base
from service.rounds import models as _rounds  # noqa: F401  (benchmark series and rounds)

metadata = Base.metadata

__all__ = ["Base", "metadata"]
