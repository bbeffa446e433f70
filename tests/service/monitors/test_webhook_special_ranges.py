"""Webhook URLs in IANA's special-purpose ranges are refused, even where `is_global` says otherwise."""
from __future__ import annotations

import pytest

from service.errors import InvalidRequest
from service.monitors.webhook_targets import check_webhook_url


@pytest.mark.parametrize("url", ["http://192.0.0.8/", "http://192.0.0.9/", "http://[fec0::1]/",
                                 "http://192.31.196.1/", "http://[3fff::1]/", "http://[2001:db8::1]/",
                                 "http://198.18.0.1/", "http://[::ffff:192.0.0.8]/"])
@pytest.mark.parametrize("allow_private", [False, True])
def test_special_purpose_addresses_are_refused(url, allow_private):
    with pytest.raises(InvalidRequest) as caught:
        check_webhook_url(url, allow_private=allow_private)
    assert caught.value.code == "invalid_webhook"


@pytest.mark.parametrize("url", ["http://8.8.8.8/hook", "https://[2606:4700::1111]/hook"])
def test_public_addresses_still_pass(url):
    check_webhook_url(url, allow_private=False)
