"""What an audit row keeps of its request: typed options stored flat, parsed back at the boundary."""
from __future__ import annotations

import pytest

from audit.errors import AuditInputError
from audit.options import AuditOptions
from service.audits.schemas import AuditRequest
from service.errors import InvalidRequest, StoredOptionsInvalid, audit_input_errors


def test_a_request_round_trips_through_its_stored_json():
    series = {"name": "derm", "rounds": [1, 2], "dataset": "ds_1"}
    request = AuditRequest(options=AuditOptions(alpha=0.01, engine="dask"), annotations="ds_notes",
                           benchmark_series=series)
    stored = request.stored()
    assert stored["alpha"] == 0.01 and stored["annotations"] == "ds_notes" and stored["benchmark_series"] == series
    assert AuditRequest.from_stored("au_1", stored) == request


def test_rows_written_before_the_type_existed_still_parse():
    """Older rows hold the options' fields flat, without annotations or a series."""
    assert AuditRequest.from_stored("au_1", {}).options == AuditOptions()
    assert AuditRequest.from_stored("au_1", None).benchmark_series is None


@pytest.mark.parametrize("stored,field", [({"alpha": 0.9}, "alpha"), ({"unknown_knob": 1}, "unknown_knob")])
def test_options_that_do_not_parse_are_refused_naming_the_field(stored, field):
    with pytest.raises(StoredOptionsInvalid) as raised:
        AuditRequest.from_stored("au_1", stored)
    assert raised.value.code == "stored_options_invalid" and field in raised.value.details["problem"]
    assert raised.value.details["audit_id"] == "au_1"


def test_the_librarys_refusal_becomes_the_services_422_with_its_code():
    with pytest.raises(InvalidRequest) as raised, audit_input_errors():
        raise AuditInputError("nothing to compare", code="cannot_audit", details={"columns": ["a"]})
    assert raised.value.status_code == 422 and raised.value.code == "cannot_audit"
    assert raised.value.details == {"columns": ["a"]} and raised.value.message == "nothing to compare"
