"""The service's column roles are the library's: one set of rules for uploads, audits and monitors."""
from __future__ import annotations

import pytest

import service.roles
from audit.roles import ROLES, infer_roles
from service.errors import InvalidRequest


def test_the_service_reads_the_same_rules():
    assert service.roles.infer_roles is infer_roles and service.roles.ROLES is ROLES


def test_an_upload_schema_with_an_unknown_role_is_refused_naming_the_roles():
    with pytest.raises(InvalidRequest) as err:
        service.roles.parse_schema({"columns": {"age": "feeture"}}, ["age"], "b.csv")
    assert err.value.code == "invalid_schema" and "feature" in str(err.value)
