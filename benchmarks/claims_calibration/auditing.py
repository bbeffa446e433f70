"""One full in-process audit of a benchmark/production pair of a prepared table.

The audit is ``service.audits.local.audit_frames``, the same pipeline as ``contextshift audit`` and
``POST /v1/audits``. The HTML and Markdown renderings are skipped by default (``render=False``):
they come after the result is final and cost about a third of an audit at n = 500, and the claims
harness only reads the result.
"""
from __future__ import annotations

import os
import subprocess
from functools import lru_cache
from typing import Any

import pandas as pd

from benchmarks.claims_calibration.tables import ROOT, PreparedTable

os.environ.setdefault("DO_NOT_TRACK", "1")

__all__ = ["audit_pair", "code_version", "seed_for"]


_PACKS: dict[str, Any] = {}


def _pack(table: PreparedTable):
    if table.name not in _PACKS:
        _PACKS[table.name] = table.pack()
    return _PACKS[table.name]


def audit_pair(table: PreparedTable, benchmark: pd.DataFrame, production: pd.DataFrame, *, seed: int,
               alpha: float = 0.05, render: bool = False) -> dict[str, Any]:
    """The AuditResult (JSON) of ``benchmark`` against ``production`` under the table's pack.

    Parameters
    ----------
    table : PreparedTable
    benchmark, production : DataFrame, shape (n_b, n_columns) and (n_p, n_columns')
        Production may lack ``label`` (an unlabelled audit).
    seed : int
        The audit's seed (permutation tests, bootstraps, cross-validation).
    alpha : float
    render : bool
        Also render the HTML and Markdown reports (slower; the result is the same).
    """
    from audit.roles import infer_roles
    from service.audits.local import audit_frames

    pack = _pack(table)
    contexts = [c.name for c in pack.context]
    outcome = audit_frames(benchmark, production, pack=pack, options={"seed": int(seed), "alpha": alpha},
                           benchmark_roles=infer_roles(benchmark.columns, context_columns=contexts),
                           production_roles=infer_roles(production.columns, context_columns=contexts),
                           render=render)
    return outcome.result_json


def seed_for(*parts: Any) -> int:
    """A fresh, reproducible 32-bit seed for one replicate (``zlib.crc32`` of its coordinates)."""
    import zlib

    return zlib.crc32(repr(parts).encode()) & 0x7FFFFFFF


@lru_cache(maxsize=1)
def code_version() -> str:
    """The commit the audited code is at, with ``+dirty`` when the working tree has changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "audit", "detectors",
                                "reports", "service", "domains"],
                               cwd=ROOT, capture_output=True, text=True, timeout=10).stdout
        return head + ("+dirty" if dirty.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
