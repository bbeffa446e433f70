"""Which columns are likely a dataset's labels or the model's outputs when no column has that role:
the warnings an upload answers with, and the notes an audit writes; and the notes on columns whose
roles the two datasets disagree on.

Names alone are weak evidence (``survived`` says nothing), so a label candidate is found by its
values: a column whose values are those of a prediction-like column (or of the other side's labels).
A prediction-like column is one named ``pred*``, a probability one ``prob*``/``score*``."""
from __future__ import annotations

import re
from typing import Iterable, Mapping

import pandas as pd

__all__ = ["label_candidates", "output_candidates", "upload_warnings", "missing_role_notes", "role_disagreements"]

PREDICTION_NAME = re.compile(r"(^|_)(pred|predicted|prediction|predictions|yhat|y_hat)(_|$)|^pred")
PROBABILITY_NAME = re.compile(r"(^|_)(prob|probs|proba|probability|score|scores|confidence)(_|$)|^prob|^score")
LABEL_NAME = re.compile(r"^(target|y|y_true|class|outcome|truth|ground_truth|actual|gold|label_.+|.+_label)$")
MAX_LABEL_VALUES = 50  # more distinct values than this is not a classification label
FREE_ROLES = ("feature", "context")  # roles a label or output column may have been given by default


def _values(column: pd.Series) -> frozenset[str] | None:
    values = column.dropna().unique()
    if len(values) == 0 or len(values) > MAX_LABEL_VALUES:
        return None
    return frozenset(str(v) for v in values)


def output_candidates(frame: pd.DataFrame, roles: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(prediction-like, probability-like) columns among those with a default role."""
    free = [c for c in frame.columns if roles.get(c) in FREE_ROLES]
    preds = [c for c in free if PREDICTION_NAME.search(c.lower())]
    probs = [c for c in free if PROBABILITY_NAME.search(c.lower()) and c not in preds
             and pd.api.types.is_numeric_dtype(frame[c])]
    return preds, probs


def label_candidates(frame: pd.DataFrame, roles: Mapping[str, str],
                     known_labels: Iterable[frozenset[str]] = ()) -> list[str]:
    """Columns whose values are those of a prediction-like column, of a prediction column or of
    ``known_labels`` (the other side's label values); then columns named like a label."""
    preds, probs = output_candidates(frame, roles)
    sets = [v for v in known_labels if v]
    sets += [v for c in [*preds, *(c for c, r in roles.items() if r == "prediction")] if c in frame.columns
             for v in [_values(frame[c])] if v]
    out = []
    for c in frame.columns:
        if roles.get(c) not in FREE_ROLES or c in preds or c in probs:
            continue
        values = _values(frame[c])
        if values is not None and len(values) >= 2 and any(values <= s or s <= values for s in sets):
            out.append(c)
    out += [c for c in frame.columns if roles.get(c) in FREE_ROLES and c not in out and c not in preds
            and LABEL_NAME.match(c.lower())]
    return out


def _quoted(columns: list[str]) -> str:
    return ", ".join(f"'{c}'" for c in columns[:5])


def _schema_hint(mapping: dict[str, str]) -> str:
    body = ", ".join(f'"{c}": "{r}"' for c, r in mapping.items())
    return f'{{"columns": {{{body}}}}}'


def upload_warnings(frame: pd.DataFrame, roles: Mapping[str, str], dataset_role: str) -> list[str]:
    """Warnings for an upload's answer: a benchmark with no label, a benchmark or production with no
    model output, each naming the likely columns and how to give them their role."""
    if dataset_role not in ("benchmark", "production"):
        return []
    have = set(roles.values())
    out = []
    how = "in the upload's schema, or later with PATCH /v1/datasets/{id}"
    if dataset_role == "benchmark" and "label" not in have:
        found = label_candidates(frame, roles)
        hint = (f" Likely label column: {_quoted(found)}; give it the role with {_schema_hint({found[0]: 'label'})} "
                f"{how}." if found else f" Give the column of true classes the role 'label' {how}.")
        out.append("No column has the role 'label': the audit cannot measure the model on this benchmark (a column "
                   f"gets the role 'label' by its name 'label' or from a schema).{hint}")
    if not have & {"prediction", "score"}:
        preds, probs = output_candidates(frame, roles)
        if preds or probs:
            mapping = {**({preds[0]: "prediction"} if preds else {})}
            hint = (f" Likely model-output columns: {_quoted(preds + probs)}; give the predicted class the role "
                    f"'prediction' ({_schema_hint(mapping) if mapping else 'a schema'}) {how}. A probability column "
                    "is read as the positive class's probability when named 'score', or as proba_<class>.")
        else:
            hint = f" Give the model's predicted class the role 'prediction' {how}."
        out.append("No column has the role 'prediction' or 'score': the model's outputs cannot be compared, and "
                   f"without them the audit has no label-free estimate.{hint}")
    return out


def missing_role_notes(benchmark: pd.DataFrame, production: pd.DataFrame, bench_roles: Mapping[str, str],
                       prod_roles: Mapping[str, str]) -> list[dict[str, str]]:
    """Audit notes when the benchmark has no label or neither side a model output, with the likely columns."""
    notes = []
    bench_have, prod_have = set(bench_roles.values()), set(prod_roles.values())
    if "label" not in bench_have:
        prod_label = next((c for c, r in prod_roles.items() if r == "label"), None)
        known = [v for v in [_values(production[prod_label])] if v] if prod_label in production.columns else []
        found = label_candidates(benchmark, bench_roles, known)
        unused = (f" Production's labels in '{prod_label}' are not used: there is no benchmark label to compare them "
                  "with." if prod_label else "")
        hint = (f" Likely label column: {_quoted(found)}: give it the role 'label' (PATCH /v1/datasets/{{id}} with "
                f"{_schema_hint({found[0]: 'label'})}) and audit again." if found else
                " Give the benchmark's column of true classes the role 'label' and audit again.")
        notes.append({"part": "benchmark labels", "reason": "The benchmark has no column with the role 'label', so "
                      f"no metric was measured and no label-dependent test ran.{unused}{hint}"})
    if not (bench_have | prod_have) & {"prediction", "score"}:
        preds, probs = output_candidates(benchmark, bench_roles)
        hint = (f" Likely model-output columns: {_quoted(preds + probs)}: give the predicted class the role "
                "'prediction' (PATCH /v1/datasets/{id}) on both datasets and audit again." if preds or probs else "")
        notes.append({"part": "model outputs", "reason": "Neither dataset has a column with the role 'prediction' or "
                      f"'score', so the model's outputs were not compared and nothing was measured.{hint}"})
    return notes


def role_disagreements(benchmark: Mapping[str, str], production: Mapping[str, str]) -> list[dict[str, str]]:
    """Audit notes for shared columns whose roles differ between the two datasets."""
    return [{"part": f"column {name}",
             "reason": f"'{name}' is a {benchmark[name]} column in the benchmark but a {production[name]} column in "
                       "production; it is compared only where both roles allow it. Give both uploads the same schema."}
            for name in benchmark if name in production and benchmark[name] != production[name]]
