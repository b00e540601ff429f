"""The signed companion of a saved audit.json: the ``vsa.intoto.jsonl`` beside it.

``auditor report`` and ``auditor gate`` (for its baseline) read a saved audit.json; when the
verification summary an audit signed lies beside it, its input attestations must name audit.json
with the file's sha256 now (else audit.json changed after it was signed), and, with a key, its
signature must verify. Without a key only the digest can be checked, and the message says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from auditor.attest.keys import VerifyingKey
from auditor.attest.sign import VSA_ENVELOPE
from auditor.fsutil import sha256_file


class Companion(StrEnum):
    ABSENT = "absent"  # nothing signed beside audit.json
    VERIFIED = "verified"  # signature (given key) and digest hold
    DIGEST_ONLY = "digest-only"  # digest holds; no key to check the signature with
    BROKEN = "broken"  # it does not match: audit.json or the summary was changed


@dataclass(frozen=True)
class CompanionCheck:
    state: Companion
    message: str


def check_companion(audit_json: Path, key: VerifyingKey | None) -> CompanionCheck:
    env_path = audit_json.parent / VSA_ENVELOPE
    if not env_path.is_file():
        return CompanionCheck(Companion.ABSENT, f"not signed: no {VSA_ENVELOPE} beside "
                                                f"{audit_json.name}")
    from auditor.attest.verify import VerificationError, read_envelope

    try:
        env = read_envelope(env_path)
    except VerificationError as exc:
        return CompanionCheck(Companion.BROKEN, exc.message)
    keyids = ", ".join(sorted({s.keyid for s in env.signatures})) or "(none)"
    if key is not None and not env.verified_by(key):
        return CompanionCheck(Companion.BROKEN, f"{env_path}: its signature does not verify "
                                                f"with key {key.keyid} (signed by {keyids})")
    try:
        doc = json.loads(env.payload)
        inputs = doc["predicate"]["inputAttestations"]
        signed = [a["digest"]["sha256"] for a in inputs if a.get("uri") == audit_json.name]
    except (ValueError, KeyError, TypeError, AttributeError):
        return CompanionCheck(Companion.BROKEN, f"{env_path}: not a verification summary "
                                                f"naming {audit_json.name}")
    now = sha256_file(audit_json)
    if now not in signed:
        return CompanionCheck(Companion.BROKEN, (
            f"{audit_json} (sha256 {now}) is not the file {env_path.name} signed "
            f"({', '.join(signed) or 'none named'}): it was changed after signing"))
    if key is None:
        return CompanionCheck(Companion.DIGEST_ONLY, (
            f"{audit_json.name} matches the summary {env_path.name} signed by key id {keyids}; "
            "the signature was not checked (no key given: pass --key PUB)"))
    return CompanionCheck(Companion.VERIFIED, f"{audit_json.name} is signed: {env_path.name} "
                                              f"verified with key {key.keyid}")
