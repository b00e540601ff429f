"""RFC 3987 syntax: is a string an IRI, or an IRI reference (the JSON Schema formats ``iri`` and
``iri-reference``, which the CycloneDX schema uses for every URL it holds).

Written from the RFC's ABNF (section 2.2, with RFC 3986's IPv6 and IPv4 rules) as one regular
expression per rule, so checking costs microseconds and importing costs nothing. jsonschema's
own checker for these formats comes from ``rfc3987_syntax``, whose import builds some twenty
Earley parsers (~3 s of CPU, most of a cold SBOM's cost); :mod:`auditor.jsonschemas` imports
jsonschema without it and registers these instead. ``tests/core/test_core_iri.py`` compares the
two on generated strings. Where they differ, this module follows the RFC: ``rfc3987_syntax``
leaves out the characters beyond U+FFFF that ``ucschar`` and ``iprivate`` allow and IPv6 forms
with a short prefix before ``::`` (``[::1]``, ``[fe80::1]``), which IRIs may hold.
"""

from __future__ import annotations

import re

_UCSCHAR = ("\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef"
            + "".join(f"{chr(p << 16)}-{chr((p << 16) | 0xFFFD)}" for p in range(1, 14))
            + "\U000e1000-\U000efffd")
_IPRIVATE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
_UNRESERVED = r"A-Za-z0-9\-._~"
_IUNRESERVED = _UNRESERVED + _UCSCHAR
_SUB_DELIMS = "!$&'()*+,;="
_PCT = "%[0-9A-Fa-f]{2}"

_IPCHAR = f"(?:[{_IUNRESERVED}{_SUB_DELIMS}:@]|{_PCT})"
_ISEGMENT = f"{_IPCHAR}*"
_ISEGMENT_NZ = f"{_IPCHAR}+"
_ISEGMENT_NZ_NC = f"(?:[{_IUNRESERVED}{_SUB_DELIMS}@]|{_PCT})+"
_IQUERY = f"(?:{_IPCHAR}|[{_IPRIVATE}/?])*"
_IFRAGMENT = f"(?:{_IPCHAR}|[/?])*"

_DEC_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])"
_IPV4 = rf"{_DEC_OCTET}\.{_DEC_OCTET}\.{_DEC_OCTET}\.{_DEC_OCTET}"
_H16 = "[0-9A-Fa-f]{1,4}"
_LS32 = f"(?:{_H16}:{_H16}|{_IPV4})"


def _before(most: int) -> str:
    """``[ *most( h16 ":" ) h16 ]``: up to ``most + 1`` pieces before a ``::``."""
    return f"(?:(?:{_H16}:){{0,{most}}}{_H16})?"


_IPV6 = "(?:" + "|".join((
    f"(?:{_H16}:){{6}}{_LS32}",
    f"::(?:{_H16}:){{5}}{_LS32}",
    f"{_before(0)}::(?:{_H16}:){{4}}{_LS32}",
    f"{_before(1)}::(?:{_H16}:){{3}}{_LS32}",
    f"{_before(2)}::(?:{_H16}:){{2}}{_LS32}",
    f"{_before(3)}::{_H16}:{_LS32}",
    f"{_before(4)}::{_LS32}",
    f"{_before(5)}::{_H16}",
    f"{_before(6)}::",
)) + ")"
_IPVFUTURE = rf"v[0-9A-Fa-f]+\.[{_UNRESERVED}{_SUB_DELIMS}:]+"
_IP_LITERAL = rf"\[(?:{_IPV6}|{_IPVFUTURE})\]"
# an IPv4 address is also a reg-name, so the host needs no third branch for it
_IREG_NAME = f"(?:[{_IUNRESERVED}{_SUB_DELIMS}]|{_PCT})*"
_IUSERINFO = f"(?:[{_IUNRESERVED}{_SUB_DELIMS}:]|{_PCT})*"
_IAUTHORITY = f"(?:{_IUSERINFO}@)?(?:{_IP_LITERAL}|{_IREG_NAME})(?::[0-9]*)?"

_IPATH_ABEMPTY = f"(?:/{_ISEGMENT})*"
_IPATH_ABSOLUTE = f"/(?:{_ISEGMENT_NZ}(?:/{_ISEGMENT})*)?"
_IPATH_NOSCHEME = f"{_ISEGMENT_NZ_NC}(?:/{_ISEGMENT})*"
_IPATH_ROOTLESS = f"{_ISEGMENT_NZ}(?:/{_ISEGMENT})*"
_TAIL = rf"(?:\?{_IQUERY})?(?:#{_IFRAGMENT})?"
_SCHEME = r"[A-Za-z][A-Za-z0-9+\-.]*"

_IHIER_PART = f"(?://{_IAUTHORITY}{_IPATH_ABEMPTY}|{_IPATH_ABSOLUTE}|{_IPATH_ROOTLESS}|)"
_IRELATIVE_PART = f"(?://{_IAUTHORITY}{_IPATH_ABEMPTY}|{_IPATH_ABSOLUTE}|{_IPATH_NOSCHEME}|)"
_IRI = f"{_SCHEME}:{_IHIER_PART}{_TAIL}"

IRI = re.compile(_IRI)
IRI_REFERENCE = re.compile(f"(?:{_IRI}|{_IRELATIVE_PART}{_TAIL})")
IPV6 = re.compile(_IPV6)


def is_iri(value: object) -> bool:
    """Whether ``value`` is an IRI (RFC 3987 ``IRI``); not a string: True, as JSON Schema
    formats pass values of other types."""
    return not isinstance(value, str) or IRI.fullmatch(value) is not None


def is_iri_reference(value: object) -> bool:
    """Whether ``value`` is an IRI reference (RFC 3987 ``IRI-reference``: an IRI or a relative
    reference); not a string: True."""
    return not isinstance(value, str) or IRI_REFERENCE.fullmatch(value) is not None
