"""The rules that give every column its role, as the library applies them for the API, the CLI and
monitors alike."""
from __future__ import annotations

import doctest

import pandas as pd

import audit.roles
from audit.roles import ROLES, describe_columns, infer_roles, roles_for_audit


def test_doctests():
    assert doctest.testmod(audit.roles).failed == 0


def test_a_given_role_beats_the_pack_and_the_pack_beats_the_name():
    columns = ["label", "site", "proba_yes", "emb_0", "age"]
    roles = infer_roles(columns, schema={"label": "ignore"}, context_columns=["site", "label"])
    assert roles == {"label": "ignore", "site": "context", "proba_yes": "score", "emb_0": "embedding",
                     "age": "feature"}
    assert set(roles.values()) <= set(ROLES)


def test_an_audit_re_infers_only_what_was_not_given():
    """A dataset stored without a domain gets the audit pack's contexts; a role its uploader gave is kept."""
    frame = pd.DataFrame({"id": [1], "site": ["a"], "clinic": ["b"], "label": [0]})
    stored = describe_columns(frame, infer_roles(frame.columns, schema={"clinic": "ignore"}), explicit=["clinic"])
    assert [c["source"] for c in stored] == ["inferred from name", "default", "schema", "inferred from name"]
    assert roles_for_audit(stored, context_columns=["site", "clinic"]) == {
        "id": "id", "site": "context", "clinic": "ignore", "label": "label"}

