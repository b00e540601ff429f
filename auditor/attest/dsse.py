"""DSSE envelopes (the in-toto signature wrapper): PAE, signing, encoding and strict decoding.

An envelope is ``{"payloadType", "payload" (standard base64), "signatures": [{"keyid", "sig"}]}``;
what is signed is the PAE of the payload: ``"DSSEv1" SP len(type) SP type SP len(body) SP body``
(lengths as ASCII decimal byte counts). A ``*.intoto.jsonl`` file holds one envelope on one line.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from auditor.attest.keys import SigningKey, VerifyingKey

PAYLOAD_TYPE = "application/vnd.in-toto+json"
#: an envelope file larger than this is not one auditor wrote (nor anything sensible)
MAX_ENVELOPE_BYTES = 64 * 1024 * 1024


class EnvelopeError(ValueError):
    """The text is not a well-formed DSSE envelope (garbled, truncated, wrong shape)."""


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding of ``payload`` with its type."""
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


@dataclass(frozen=True)
class Signature:
    keyid: str
    sig: bytes


@dataclass(frozen=True)
class Envelope:
    payload_type: str
    payload: bytes
    signatures: tuple[Signature, ...]

    def to_json(self) -> dict[str, Any]:
        return {"payloadType": self.payload_type,
                "payload": base64.b64encode(self.payload).decode("ascii"),
                "signatures": [{"keyid": s.keyid, "sig": base64.b64encode(s.sig).decode("ascii")}
                               for s in self.signatures]}

    def line(self) -> str:
        """The envelope as one JSON line (ends with a newline): a ``*.intoto.jsonl`` file. Not
        passed through the redacting writer: every string in it is base64 or a hex key id."""
        return json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=True) + "\n"

    def verified_by(self, key: VerifyingKey) -> bool:
        """Whether any signature verifies with ``key`` over the PAE (key ids are hints only)."""
        data = pae(self.payload_type, self.payload)
        return any(key.verify(s.sig, data) for s in self.signatures)


def sign(payload: bytes, key: SigningKey, payload_type: str = PAYLOAD_TYPE) -> Envelope:
    return Envelope(payload_type, payload,
                    (Signature(key.keyid, key.sign(pae(payload_type, payload))),))


def _b64(value: Any, where: str) -> bytes:
    if not isinstance(value, str):
        raise EnvelopeError(f"{where} is not a string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise EnvelopeError(f"{where} is not valid base64") from None


def decode(text: str) -> Envelope:
    """Parse one envelope strictly: one JSON object on the file's only line, exactly the DSSE
    fields, base64 that decodes, at least one signature; anything else is an EnvelopeError."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise EnvelopeError("the file is empty")
    if len(lines) > 1:
        raise EnvelopeError(f"{len(lines)} lines; an auditor envelope file holds exactly one")
    try:
        data = json.loads(lines[0])
    except json.JSONDecodeError as exc:
        raise EnvelopeError(f"not JSON ({exc.msg} at column {exc.colno}): truncated or "
                            "garbled") from None
    except RecursionError:
        raise EnvelopeError("not JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise EnvelopeError("not a JSON object")
    extra = sorted(set(data) - {"payloadType", "payload", "signatures"})
    missing = sorted({"payloadType", "payload", "signatures"} - set(data))
    if missing or extra:
        raise EnvelopeError("not a DSSE envelope: " + "; ".join(
            x for x in (f"missing {', '.join(missing)}" if missing else "",
                        f"unknown {', '.join(extra)}" if extra else "") if x))
    if not isinstance(data["payloadType"], str):
        raise EnvelopeError("payloadType is not a string")
    payload = _b64(data["payload"], "payload")
    sigs = data["signatures"]
    if not isinstance(sigs, list) or not sigs:
        raise EnvelopeError("signatures is not a non-empty list")
    out = []
    for i, s in enumerate(sigs):
        if not isinstance(s, dict) or "sig" not in s or set(s) - {"keyid", "sig"}:
            raise EnvelopeError(f"signatures[{i}] is not {{keyid, sig}}")
        keyid = s.get("keyid", "")
        if not isinstance(keyid, str):
            raise EnvelopeError(f"signatures[{i}].keyid is not a string")
        out.append(Signature(keyid, _b64(s["sig"], f"signatures[{i}].sig")))
    return Envelope(data["payloadType"], payload, tuple(out))
