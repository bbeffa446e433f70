"""One webhook POST to a checked address: no second name lookup, no redirect, no proxy.

``urllib`` would resolve the host again when it connects (a rebinding name can answer a public
address to the check and 127.0.0.1 to the connection) and follows redirects (a public receiver
can answer ``302 Location: http://169.254.169.254/``). Here the connection goes to the address
:func:`~service.monitors.webhook_targets.resolve_target` checked, the ``Host`` header and TLS
server name (certificate check included) stay the URL's host, and a 3xx is an answer, not a hop.
"""
from __future__ import annotations

import http.client
import socket
import ssl

from service.monitors.webhook_targets import Target


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        self._ssl = ssl.create_default_context()  # kept: the base class's own copy is private
        super().__init__(target.host, target.port, timeout=timeout, context=self._ssl)
        self._address = target.address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._ssl.wrap_socket(sock, server_hostname=self.host)


def post_json(target: Target, data: bytes, *, timeout_s: float) -> int:
    """POST ``data`` to ``target``; the HTTP status (errors raise ``OSError``/``HTTPException``)."""
    connection = (_PinnedHTTPS if target.scheme == "https" else _PinnedHTTP)(target, timeout_s)
    try:
        connection.request("POST", target.path, body=data,
                           headers={"Content-Type": "application/json", "User-Agent": "contextshift-monitor"})
        response = connection.getresponse()
        response.read(64 * 1024)  # the receiver's answer is not used; read a little so it is not reset
        return response.status
    finally:
        connection.close()
