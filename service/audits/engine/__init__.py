"""Where an audit's statistics are computed.

* ``pandas`` (default): both datasets are loaded into memory and every detector sees every row.
* ``dask``: both datasets stay as Parquet partitions; a ``dask.distributed`` cluster scans each
  partition once into mergeable summaries (:mod:`service.audits.engine.scan`) and a documented uniform
  sample. Exact counts (categories, missing values, (label, prediction) pairs per slice) and KLL
  quantile sketches replace the rows wherever a statistic needs nothing else; the tests that need
  rows (classifier, MMD, weak-slice discovery, within-context change) run on the sample. The
  result is the same :class:`reports.result.AuditResult`; ``parameters.engine`` says which parts
  were exact, sketched or sampled.

Choose with ``CONTEXTSHIFT_ENGINE`` or ``contextshift audit --engine``; ``CONTEXTSHIFT_DASK_SCHEDULER``
names an existing scheduler (default: a local cluster sized to the machine).
"""
from __future__ import annotations

ENGINES = ("pandas", "dask")
SKETCH_K = 1000  # KLL accuracy parameter: normalized rank error about 0.28 % at 99 % confidence


def check_engine(name: str) -> str:
    """Validate an engine name, naming the setting and the choices."""
    if name not in ENGINES:
        raise ValueError(f"engine must be one of {list(ENGINES)}, got {name!r} (CONTEXTSHIFT_ENGINE / --engine).")
    return name


__all__ = ["ENGINES", "SKETCH_K", "check_engine"]
