"""An expert slice the data cannot evaluate is named in the audit's notes, never dropped in silence."""
from __future__ import annotations

import pytest

from audit import AuditData, AuditOptions, run_audit
from audit.pipeline.slicing import unevaluated_slices_note
from audit.roles import infer_roles
from domains import load_builtin, make_example
from domains.expressions import columns_used


def test_slices_on_a_column_missing_from_either_side_are_named_with_the_column():
    pack = load_builtin("dermatology")
    on_modality = sorted(s.name for s in pack.slices if "modality" in columns_used(s.ast))
    columns = {c for s in pack.slices for c in columns_used(s.ast)}
    assert unevaluated_slices_note(pack, columns, columns) is None
    note = unevaluated_slices_note(pack, columns, columns - {"modality"})
    assert note["part"] == "expert slices" and ", ".join(on_modality) in note["reason"]
    assert "'modality' is not in production" in note["reason"]
    assert "not in the benchmark" in unevaluated_slices_note(pack, columns - {"modality"}, columns)["reason"]


@pytest.mark.slow
def test_an_audit_without_the_column_says_which_slices_it_could_not_measure():
    """SYNTHETIC dermatology data without its modality column (as an images-only upload has)."""
    pack = load_builtin("dermatology")
    bench, prod = make_example("dermatology", n_benchmark=600, n_production=600, shift="none", random_state=1)
    bench, prod = bench.drop(columns=["modality"]), prod.drop(columns=["modality"])
    roles = infer_roles(bench.columns, context_columns=[c.name for c in pack.context])
    result = run_audit(AuditData(bench, roles), AuditData(prod, roles), pack=pack, options=AuditOptions(seed=1),
                       render=False).result
    notes = [n.reason for n in result.notes if n.part == "expert slices"]
    assert len(notes) == 1 and "smartphone" in notes[0] and "'modality' is not in either dataset" in notes[0]
    assert "smartphone" not in {s.name for s in result.slices}
