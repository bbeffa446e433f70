"""Planted truths: SYNTHETIC changes on real tables, each with the claim an audit should lead with.

Benchmark and production are disjoint draws from a table's pool (with replacement when the pool is
too small); production is labelled; then one change is planted in production only (where, per table:
:mod:`benchmarks.claims_calibration.setups`):

* ``class_mix`` — production resampled so the positive (or first) class gains 20 points of share
  (capped at 0.9); rows within each class unchanged (a pure label shift, P(x | y) fixed). Expected:
  ``label_shift`` — and, since every slice's metric moves with its class mix, no concept shift.
* ``used_feature`` — production rows drawn with weights exp(0.5 z) of a standardised numeric feature
  the model uses: its mean moves by about +0.5 sd, every row stays a real (inputs, label, output)
  triple, so what the model gets right given its inputs is unchanged (a pure covariate shift).
  Expected: ``covariate_shift``.
* ``tilt_context`` — the same tilt on a column a context is cut from or travels with, so a context's
  mix moves with the inputs. Expected: ``covariate_shift`` (the context-mix change is its side effect).
* ``ignored_feature`` — a numeric column the model never sees moved by +0.5 sd. Expected:
  ``covariate_shift`` (of low severity: it cannot cost anything).
* ``slice_concept`` — inside one expert slice, labels of correctly predicted rows flipped so the
  slice's accuracy drops by about 15 points. Expected: ``concept_shift``.
* ``slice_flip`` — 20 % of one expert slice's labels flipped at random (label noise there).
  Expected: ``concept_shift``.
* ``slice_concept_share`` — the slice's rows twice as likely in production (its share moved) and the
  15-point drop inside it. Expected: ``concept_shift`` (its share change is the same rows).
* ``new_population`` — the benchmark lacks one context value; production holds it at 15 % (its rows
  move a numeric column). Expected: ``untested_context``.
* ``all_new_context`` — every production row has a context value the benchmark lacks. Expected:
  ``untested_context``.
* ``tiny`` — 40 benchmark rows against 28 production rows, nothing changed. Expected: no change claim.
"""
from __future__ import annotations

import contextlib
import json
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from audit.claims.located import measured_metric
from benchmarks.claims_calibration.auditing import _pack, audit_pair, code_version, seed_for
from benchmarks.claims_calibration.changes import (
    flip_in_slice,
    flip_random_in_slice,
    offset_column,
    oversample_slice,
    tilt_rows,
)
from benchmarks.claims_calibration.counting import claims_of
from benchmarks.claims_calibration.null import read_log
from benchmarks.claims_calibration.setups import PLANTED_TABLES, QUICK_PLANTED, PlantedSetup
from benchmarks.claims_calibration.tables import PreparedTable, prepare
from detectors.slice_results import Outcomes
from detectors.slices import SliceEvaluator
from domains import evaluate, parse
from domains.expressions import columns_used
from reports.records import finding_key

__all__ = ["PLANTED_TABLES", "QUICK_PLANTED", "SCENARIOS", "PlantedSetup", "PlantedOutcome", "plant", "run_planted",
           "format_planted"]

from benchmarks.claims_calibration.planted_summary import format_planted

SCENARIOS = ("class_mix", "used_feature", "tilt_context", "ignored_feature", "slice_concept", "slice_flip",
             "slice_concept_share", "new_population", "all_new_context", "tiny")
EXPECTED = {"class_mix": "label_shift", "used_feature": "covariate_shift", "tilt_context": "covariate_shift",
            "ignored_feature": "covariate_shift", "slice_concept": "concept_shift", "slice_flip": "concept_shift",
            "slice_concept_share": "concept_shift", "new_population": "untested_context",
            "all_new_context": "untested_context", "tiny": "none"}
SLICE_SCENARIOS = ("slice_concept", "slice_flip", "slice_concept_share")
DETECTABLE_Z = 3.0
# how a statement cites a loss measured on the labelled production rows ("Measured on the labelled
# production rows, ...", "accuracy fell from 0.58 on the benchmark to 0.43 in production")
MEASURED = re.compile(r"measured|fell from|rose from", re.IGNORECASE)


@dataclass(frozen=True)
class PlantedOutcome:
    """What the audit of one planted truth claimed. ``synthetic`` is always true."""

    table: str
    scenario: str
    expected: str
    top_kind: str
    top_right: bool
    n_change_claims: int
    n_expected_kind: int
    severity: str
    status: str
    cites_measured: bool | None
    top_statement: str
    kinds: tuple[str, ...]
    synthetic: bool = True
    error: str | None = None
    rep: int = 0  # replicate: 0 is the fixed seed of the table and scenario, k > 0 a fresh draw
    top_key: str = ""
    # |z| of the planted change on the pack's metric, production's slice before vs after planting, with the
    # standard error of an unpaired comparison of that size (the audit's own test): how visible the truth
    # is at this n, whatever the audit does. None where the truth is not a change of one slice's metric.
    planted_z: float | None = None

    @property
    def detectable(self) -> bool:
        """A truth an unpaired test of its own slice's metric tells at |z| >= 3 (or one of another kind)."""
        return self.planted_z is None or self.planted_z >= DETECTABLE_Z

    @property
    def restated(self) -> bool:
        """More than one change claim where one fact was planted."""
        return self.n_change_claims > 1

    @property
    def missed(self) -> bool:
        """A planted change with no change claim at all: not detected (a miss, not a wrong cause)."""
        return self.expected != "none" and self.top_kind == "none"

    def to_dict(self) -> dict:
        return asdict(self)


def _draw(pool: pd.DataFrame, n: int, rng: np.random.Generator, exclude: np.ndarray | None = None) -> pd.DataFrame:
    rows = np.arange(len(pool)) if exclude is None else np.flatnonzero(~exclude)
    picked = rng.choice(rows, n, replace=len(rows) < n)
    return pool.iloc[picked].reset_index(drop=True)


def _disjoint(pool: pd.DataFrame, n_b: int, n_p: int, rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    if len(pool) >= n_b + n_p:
        order = rng.permutation(len(pool))
        return (pool.iloc[order[:n_b]].reset_index(drop=True), pool.iloc[order[n_b:n_b + n_p]].reset_index(drop=True))
    return _draw(pool, n_b, rng), _draw(pool, n_p, rng)


def plant(table: PreparedTable, setup: PlantedSetup, scenario: str, n: int,
          rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The benchmark and the (changed, labelled) production frame of one planted truth."""
    benchmark, production, _ = plant_with_before(table, setup, scenario, n, rng)
    return benchmark, production


def plant_with_before(table: PreparedTable, setup: PlantedSetup, scenario: str, n: int,
                      rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """:func:`plant`, and for a change of one slice's labels the production frame before it (else None)."""
    if scenario in SLICE_SCENARIOS:
        benchmark, production = _disjoint(table.pool, n, n, rng)
        if scenario == "slice_concept_share":
            production = oversample_slice(table, setup.slice_expression, 2.0, n, rng)
        if scenario == "slice_flip":
            return benchmark, flip_random_in_slice(table, production, setup.slice_expression, 0.2, rng), production
        return benchmark, flip_in_slice(table, production, setup.slice_expression, 0.15, rng), production
    return (*_plant_other(table, setup, scenario, n, rng), None)


def planted_z(table: PreparedTable, expression: str, before: pd.DataFrame, after: pd.DataFrame) -> float:
    """|z| of the slice's metric change from ``before`` to ``after`` (the same rows, relabelled), on the
    table's pack metric (accuracy where that one cannot move: :func:`audit.claims.located.measured_metric`)
    with the standard error of two independent samples of the slice's size."""
    inside_b = evaluate(expression, before).to_numpy()
    inside_a = evaluate(expression, after).to_numpy()
    # the metric the audit measures a slice's change with (accuracy where the primary one is blind there)
    metric = measured_metric(_pack(table).metrics[0], before["prediction"].to_numpy()[inside_b],
                             after["prediction"].to_numpy()[inside_a])
    evaluator = SliceEvaluator(metric=metric, positive=table.source.positive, alpha=0.05, n_bootstrap=200)
    evaluator.fit(Outcomes(before["prediction"].to_numpy(), before["label"].to_numpy()))
    result = evaluator.test(Outcomes(after["prediction"].to_numpy(), after["label"].to_numpy()),
                            slices={"planted": (inside_b, inside_a)})
    p = result.slices[0].p_value
    return float("nan") if p != p else float(stats.norm.isf(max(p, 1e-300) / 2))


def _plant_other(table: PreparedTable, setup: PlantedSetup, scenario: str, n: int,
                 rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    pool = table.pool
    if scenario == "tiny":
        return _disjoint(pool, 40, 28, rng)
    if scenario in ("new_population", "all_new_context"):
        is_new = (pool[setup.context].astype(str) == setup.new_value).to_numpy()
        benchmark = _draw(pool, n, rng, exclude=is_new)
        if scenario == "all_new_context":
            return benchmark, _draw(pool, n, rng, exclude=~is_new)
        n_new = int(round(0.15 * n))
        production = pd.concat([_draw(pool, n - n_new, rng, exclude=is_new), _draw(pool, n_new, rng, exclude=~is_new)])
        return benchmark, production.sample(frac=1.0, random_state=int(rng.integers(2**31))).reset_index(drop=True)
    benchmark, production = _disjoint(pool, n, n, rng)
    if scenario == "class_mix":
        target = table.source.positive or table.classes[0]
        share = float(np.mean(pool["label"] == target))
        n_target = int(round(n * min(share + 0.2, 0.9)))
        is_target = (pool["label"] == target).to_numpy()
        production = pd.concat([_draw(pool, n_target, rng, exclude=~is_target),
                                _draw(pool, n - n_target, rng, exclude=is_target)])
        return benchmark, production.sample(frac=1.0, random_state=int(rng.integers(2**31))).reset_index(drop=True)
    if scenario == "used_feature":
        return benchmark, tilt_rows(table, table.source.used, 0.5, n, rng)
    if scenario == "tilt_context":
        return benchmark, tilt_rows(table, setup.tilt or table.source.used, 0.5, n, rng)
    if scenario == "ignored_feature":
        return benchmark, offset_column(table, production, table.source.ignored, 0.5)
    raise ValueError(f"scenario must be one of {SCENARIOS}, got {scenario!r}.")


def _columns(definition: str) -> set[str]:
    try:
        return set(columns_used(parse(definition)))
    except ValueError:
        return set()


def _right(setup: PlantedSetup, scenario: str, top_kind: str, top_key: str = "") -> bool:
    """The top change claim names the planted cause: its kind (or another kind that is right too: a tilted
    column that is itself a context is a context-mix change; more of production in a weak slice whose
    metric also fell) and, where the change lives in some rows, those rows."""
    kinds = {EXPECTED[scenario]} | {k for s, k, _ in setup.also_right if s == scenario}
    moved = {"used_feature": "used", "tilt_context": "tilt", "ignored_feature": "ignored"}.get(scenario)
    if moved is not None:
        source = prepare(setup.table).source
        column = (setup.tilt or source.used) if moved == "tilt" else getattr(source, moved)
        if column in source.contexts:
            # a moved context column is a change of its mix, named by the column or by the part of it that
            # moved (a weak range of it whose share grew)
            rows = top_key.split(":", 1)[-1]
            if top_kind == "context_mix_shift" or (top_kind == "underperforming_slice" and _columns(rows) == {column}):
                return True
    if scenario == "slice_concept_share":
        kinds.add("underperforming_slice")
    if top_kind not in kinds:
        return False
    if scenario in ("slice_concept", "slice_flip", "slice_concept_share"):
        return top_key.split(":", 1)[-1] == finding_key(top_kind, setup.slice_expression).split(":", 1)[-1]
    if scenario == "new_population":
        return setup.context in top_key and setup.new_value in top_key
    return True


def run_one(setup: PlantedSetup, scenario: str, n: int, alpha: float = 0.05, rep: int = 0) -> PlantedOutcome:
    table = prepare(setup.table)
    seed = seed_for("planted", setup.table, scenario, n) if rep == 0 else seed_for("planted", setup.table, scenario, n,
                                                                                    rep)
    benchmark, production, before = plant_with_before(table, setup, scenario, n, np.random.default_rng(seed))
    z = None if before is None else planted_z(table, setup.slice_expression, before, production)
    expected = EXPECTED[scenario]
    try:
        claims = claims_of(audit_pair(table, benchmark, production, seed=seed, alpha=alpha))
    except Exception as exc:  # reported in the table, the other truths still run
        return PlantedOutcome(setup.table, scenario, expected, "error", False, 0, 0, "-", "error", None, "", (),
                              error=f"{type(exc).__name__}: {exc}"[:300], rep=rep)
    change = [lim for lim in claims.limitations if lim["claim"] == "change"]
    top = change[0] if change else None
    top_kind = top["kind"] if top else "none"
    cites = None if top is None else bool(MEASURED.search(top["statement"]))
    return PlantedOutcome(
        table=setup.table, scenario=scenario, expected=expected, top_kind=top_kind,
        top_right=_right(setup, scenario, top_kind, top["key"] if top else ""), top_key=top["key"] if top else "",
        n_change_claims=len(change), n_expected_kind=sum(lim["kind"] == expected for lim in change),
        severity=claims.change_severity, status=claims.status, cites_measured=cites,
        top_statement=(top["statement"] if top else "")[:2000], kinds=tuple(lim["kind"] for lim in change), rep=rep,
        planted_z=z)


def _run(args: tuple) -> PlantedOutcome:
    setup, scenario, n, alpha, rep = args
    return run_one(setup, scenario, n, alpha, rep=rep)


def run_planted(*, tables=PLANTED_TABLES, n: int = 2_000, scenarios=SCENARIOS, alpha: float = 0.05,
                log: Path | None = None, verbose: bool = True, reps: int = 1, workers: int = 1) -> list[PlantedOutcome]:
    """Every planted truth on every table in ``tables``, at ``n`` rows per side (``tiny``: 40 vs 28),
    ``reps`` times each (replicate 0 is the fixed seed, the others fresh draws of both sides), in
    ``workers`` processes.

    With ``log`` (JSON Lines), outcomes already there for the same table, scenario, ``n``, replicate and
    code version are reused and new ones appended."""
    known = {}
    for record in (read_log(log) if log else []):
        if record.get("code") == code_version():  # another commit's outcome is audited again
            known[(record["table"], record["scenario"], record.get("n"), record.get("rep", 0))] = record
    outcomes, todo = [], []
    for setup, scenario, rep in ((t, sc, r) for r in range(reps) for t in tables for sc in scenarios):
        record = known.get((setup.table, scenario, n, rep))
        if record is None:
            todo.append((setup, scenario, n, alpha, rep))
            continue
        fields = {k: v for k, v in record.items() if k in PlantedOutcome.__dataclass_fields__}
        cites = None if fields["top_kind"] in ("none", "error") else bool(MEASURED.search(fields["top_statement"]))
        outcomes.append(PlantedOutcome(**{**fields, "kinds": tuple(fields["kinds"]), "cites_measured": cites,
                                          "top_right": _right(setup, scenario, fields["top_kind"],
                                                              fields.get("top_key", ""))}))
    with ProcessPoolExecutor(workers) if workers > 1 else contextlib.nullcontext() as pool:
        done = pool.map(_run, todo) if pool is not None else map(_run, todo)
        for outcome in done:
            outcomes.append(outcome)
            if log:
                log.parent.mkdir(parents=True, exist_ok=True)
                with log.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps({**outcome.to_dict(), "n": n, "code": code_version()}) + "\n")
            if verbose:
                print(f"  planted {outcome.table}/{outcome.scenario}/{outcome.rep}: top {outcome.top_kind} (expected "
                      f"{outcome.expected})", flush=True)
    return outcomes
