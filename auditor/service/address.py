"""The address a server binds, read the way the resolver reads it.

A server hands ``--host`` to ``getaddrinfo``; for a numeric IPv4 host glibc accepts every
``inet_aton`` form: ``0``, ``0.0``, ``0x0``, ``0177.1``, ``127.1`` (one to four parts, each
decimal, ``0x`` hex or ``0``-prefixed octal, the last part filling the remaining bytes). IPv6 hosts
come as ``ipaddress`` reads them (``::0``, ``0:0:0:0:0:0:0:0``), in brackets (``[::]``), with a zone
(``fe80::1%eth0``) or v4-mapped (``::ffff:0.0.0.0`` is 0.0.0.0). An empty host, ``*`` and every
spelling of 0.0.0.0 or ``::`` mean every interface; anything else that does not parse is a host
name, resolved when the server starts (only ``localhost`` is known to be loopback).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_PART = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*")
#: the bytes each inet_aton part may fill, by the number of parts
_LIMITS = {1: (2**32,), 2: (2**8, 2**24), 3: (2**8, 2**8, 2**16), 4: (2**8,) * 4}


def inet_aton(text: str) -> ipaddress.IPv4Address | None:
    """``text`` as ``inet_aton`` reads it, strictly (no trailing text); None if it is not one."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = []
    for part in parts:
        if not _PART.fullmatch(part):
            return None
        if part[:2].lower() == "0x":
            values.append(int(part[2:], 16))
        elif part.startswith("0") and len(part) > 1:
            values.append(int(part, 8))
        else:
            values.append(int(part))
    limits = _LIMITS[len(values)]
    if any(v >= lim for v, lim in zip(values, limits, strict=True)):
        return None
    number = 0
    for v, lim in zip(values, limits, strict=True):
        number = number * lim + v
    return ipaddress.IPv4Address(number)


def parse_address(host: str) -> IPAddress | None:
    """The IP address ``host`` names, or None for a host name. ``""`` and ``*`` are 0.0.0.0."""
    text = host.strip()
    if text in ("", "*"):
        return ipaddress.IPv4Address(0)
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    v4 = inet_aton(text)
    if v4 is not None:
        return v4
    try:
        addr = ipaddress.ip_address(text.split("%", 1)[0] if ":" in text else text)
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


@dataclass(frozen=True)
class BindAddress:
    """``--host`` as written and as the resolver reads it."""

    text: str
    ip: IPAddress | None  # None: a host name

    @property
    def everywhere(self) -> bool:
        return self.ip is not None and self.ip.is_unspecified

    @property
    def loopback(self) -> bool:
        if self.ip is None:
            return self.text.strip().lower().rstrip(".") == "localhost"
        return self.ip.is_loopback

    @property
    def canonical(self) -> str:
        """The spelling to write into a unit: the address in its usual form, or the name."""
        return str(self.ip) if self.ip is not None else self.text


def bind_address(host: str) -> BindAddress:
    return BindAddress(host, parse_address(host))


def is_loopback(host: str) -> bool:
    return bind_address(host).loopback


def binds_everywhere(host: str) -> bool:
    return bind_address(host).everywhere
