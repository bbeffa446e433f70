"""Every table of the service in one metadata: what Alembic compares the migrations with.

Each resource keeps its tables in its own module; importing them here (and nowhere else for
registration's sake) puts them all on :data:`service.orm.Base.metadata` without an import cycle.
"""
from __future__ import annotations

from service.audits import models as _audits  # noqa: F401  (audits, service instances)
from service.datasets import models as _datasets  # noqa: F401
from service.monitors import models as _monitors  # noqa: F401  (monitors, runs, files, alerts, outbox)
from service.orm import Base
from service.packs import models as _packs  # noqa: F401  (custom packs and their versions)
from service.rounds import models as _rounds  # noqa: F401  (benchmark series and rounds)

metadata = Base.metadata

__all__ = ["Base", "metadata"]
