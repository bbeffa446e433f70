"""Which webhook URLs a monitor may post to, checked when it is defined and again at delivery.

A webhook URL is chosen by whoever defines the monitor, and the service posts to it from inside
its network, so an unchecked URL is a way to reach what only the service can reach: loopback
services, the cloud metadata endpoint, private hosts (and, from the delivery errors, to tell
their open ports from closed ones). The rules:

* http or https, a host name or IP literal, no user name or password, no whitespace or control
  characters anywhere in the URL;
* every address the host stands for must be public: ``ipaddress``'s ``is_global`` and outside every
  special-purpose range IANA lists (:data:`SPECIAL_PURPOSE`: ``is_global`` misses some on this
  Python, e.g. 192.0.0.0/24 and the deprecated site-local fec0::/10), judged after unwrapping IPv4
  inside IPv6 (``::ffff:a.b.c.d``, 6to4, NAT64) and after reading legacy IPv4 spellings the C
  resolver accepts (``2130706433``, ``0x7f000001``, ``127.1``, ``0177.0.0.1``);
* ``CONTEXTSHIFT_WEBHOOK_ALLOW_PRIVATE`` lets private and loopback receivers through for
  on-premise installs; link-local (the metadata address 169.254.169.254 among them), unspecified,
  multicast, reserved and known metadata names and addresses are refused even then.

:func:`resolve_target` is what delivery uses: it resolves the name once, checks every address,
and returns the checked address to connect to, so no second lookup can be rebound to an
internal address between check and connection.
"""
from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from service.errors import InvalidRequest

FIELD = "alerts.webhook"
METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.goog", "metadata", "instance-data",
                            "instance-data.ec2.internal", "metadata.azure.internal"})
# metadata services that do not sit in link-local space (AWS over IPv6, Alibaba Cloud)
METADATA_ADDRESSES = frozenset({ipaddress.ip_address("fd00:ec2::254"), ipaddress.ip_address("100.100.100.200")})
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# what CONTEXTSHIFT_WEBHOOK_ALLOW_PRIVATE lets through: loopback, RFC 1918, carrier-grade NAT, IPv6 ULA
_PRIVATE = tuple(ipaddress.ip_network(n) for n in ("127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                                                   "100.64.0.0/10", "::1/128", "fc00::/7"))
# IANA's IPv4 and IPv6 special-purpose address registries (and the deprecated site-local range):
# none of these is a public receiver, whatever is_global says on a given Python version
SPECIAL_PURPOSE = tuple(ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24",
    "192.175.48.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4",
    "255.255.255.255/32", "::/128", "::ffff:0:0/96", "64:ff9b:1::/48", "100::/64", "2001::/23",
    "2001:db8::/32", "3fff::/20", "5f00::/16", "fec0::/10"))
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f]")


class TargetRefused(ValueError):
    """A webhook URL or one of its addresses is not allowed; ``reason`` says which rule."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Target:
    """A checked URL: where to connect (``address``) and what to say in the request."""

    scheme: str
    host: str  # for the Host header and TLS server name
    port: int
    path: str  # path and query, never empty
    address: str  # the checked IP address to connect to


@dataclass(frozen=True)
class _Parts:
    scheme: str
    host: str
    port: int
    path: str
    literal: ipaddress.IPv4Address | ipaddress.IPv6Address | None


def _parse(url: str) -> _Parts:
    if not isinstance(url, str) or not url:
        raise TargetRefused("the URL is empty")
    if _BAD_CHARS.search(url):
        raise TargetRefused("the URL contains whitespace or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetRefused(f"the URL does not parse ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise TargetRefused("the URL must be http or https")
    if "@" in parts.netloc or parts.username is not None or parts.password is not None:
        raise TargetRefused("the URL must not carry a user name or password")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise TargetRefused("the URL has no host")
    literal = _literal(host)
    if literal is None:
        try:
            host = host.encode("idna").decode("ascii").lower()
        except UnicodeError:
            raise TargetRefused("the host name is not a valid name") from None
        if len(host) > 253 or not all(_LABEL.match(label) for label in host.split(".")):
            raise TargetRefused("the host name is not a valid name")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return _Parts(parts.scheme, host, port or (443 if parts.scheme == "https" else 80), path, literal)


def _literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An IP address the host spells, in any form the C resolver would read as one."""
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if re.fullmatch(r"[0-9a-fA-FxX.]+", host) and not re.search(r"[g-wyzG-WYZ]", host):
        try:  # inet_aton reads 2130706433, 0x7f000001, 127.1 and octal parts, as getaddrinfo does
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            if host.replace(".", "").isdigit() or host.lower().startswith("0x"):
                raise TargetRefused("the host looks like an IP address but is not a valid one") from None
    return None


def _embedded(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if int(address) >> 32 == 0 and int(address) > 1:  # deprecated IPv4-compatible ::a.b.c.d
        return ipaddress.IPv4Address(int(address))
    return None


def check_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address, *, allow_private: bool) -> None:
    """Raise :class:`TargetRefused` unless a webhook may be delivered to ``address``."""
    inner = _embedded(address)
    if inner is not None:  # what the packet reaches is the IPv4 address inside
        return check_address(inner, allow_private=allow_private)
    if address in METADATA_ADDRESSES:
        raise TargetRefused(f"{address} is a cloud metadata address")
    for test, what in ((address.is_unspecified, "the unspecified address"),
                       (address.is_link_local, "link-local (cloud metadata lives there)"),
                       (address.is_multicast, "a multicast address")):
        if test:
            raise TargetRefused(f"{address} is {what}")
    if any(address in network for network in _PRIVATE if network.version == address.version):
        if allow_private:
            return None
        kind = "a loopback" if address.is_loopback else "a private"
        raise TargetRefused(f"{address} is {kind} address (CONTEXTSHIFT_WEBHOOK_ALLOW_PRIVATE allows "
                            "private receivers for on-premise installs)")
    if address.is_reserved or not address.is_global:
        raise TargetRefused(f"{address} is a reserved or otherwise non-public address")
    if any(address in network for network in SPECIAL_PURPOSE if network.version == address.version):
        raise TargetRefused(f"{address} is in a special-purpose range (IANA), not a public address")
    return None


def _check_name(host: str, *, allow_private: bool) -> None:
    if host in METADATA_NAMES or host.endswith((".metadata.google.internal", ".internal.metadata")):
        raise TargetRefused(f"{host} is a cloud metadata name")
    if (host == "localhost" or host.endswith(".localhost")) and not allow_private:
        raise TargetRefused(f"{host} is a loopback name")


def resolve_target(url: str, *, allow_private: bool, resolve=None) -> Target:
    """Resolve once, check every address the name has, and return the first one to connect to.

    Raises :class:`TargetRefused` for a URL the rules refuse and :class:`OSError` when the name
    does not resolve (a passing fault: the message is tried again later).
    """
    parts = _parse(url)
    if parts.literal is not None:
        check_address(parts.literal, allow_private=allow_private)
        return Target(parts.scheme, parts.host, parts.port, parts.path, str(parts.literal))
    _check_name(parts.host, allow_private=allow_private)
    infos = (resolve or socket.getaddrinfo)(parts.host, parts.port, type=socket.SOCK_STREAM)
    # str(): the host of an IPv4/IPv6 address is a str already; only other families' tuples hold an int
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    if not addresses:
        raise OSError(f"{parts.host} has no address")
    for address in addresses:  # every one: a name with one public and one internal address is refused
        check_address(address, allow_private=allow_private)
    return Target(parts.scheme, parts.host, parts.port, parts.path, str(addresses[0]))


def check_webhook_url(url: str | None, *, allow_private: bool, resolve=None) -> None:
    """At definition: refuse a URL the rules refuse (422 naming ``alerts.webhook``).

    A name that does not resolve now is accepted (delivery checks it again, and a receiver's DNS
    may come later); a name that resolves to a refused address is refused now.
    """
    if url is None:
        return
    try:
        resolve_target(url, allow_private=allow_private, resolve=resolve)
    except TargetRefused as exc:
        raise InvalidRequest(f"Webhook URL refused ({FIELD}): {exc.reason}.", code="invalid_webhook",
                             details={"field": FIELD, "reason": exc.reason}) from None
    except (OSError, UnicodeError):
        return
