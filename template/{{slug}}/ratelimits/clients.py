"""How per-address limits name a client."""

from __future__ import annotations

import ipaddress


def client_key(address: str | None) -> str | None:
    """The client a per-address limit counts: an IPv4 address itself, an IPv6 address by its /64
    (one subscriber's network, whose hosts take any address in it at will: keyed alone, each new
    address would be a fresh client), an IPv4-mapped IPv6 address as its IPv4, anything else (a
    test client's name) as given. None when there is no address."""
    if not address:
        return None
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address[:90]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)
