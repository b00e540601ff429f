"""``auditor attest verify FILE --key PUB [--subject FILE] [--spec SPEC]``.

Checks, in order, each failure its own message and exit 1: the file is one well-formed DSSE
envelope (not truncated or garbled); a signature verifies over the PAE with the given key (a
wrong key is told apart from a changed payload by the key id); the payload type is in-toto's; the
payload is an in-toto Statement v1; the subject's digest matches ``--subject`` (a file's sha256,
or a folder's git tree hash); and for a verification summary with ``--spec``, its policy digest
matches the policy, waivers and profile files the spec names now (and, without ``--subject``, its
subject matches the spec's bundle). A missing file or a key that is not a key is exit 2.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.attest import dsse
from auditor.attest.keys import VerifyingKey
from auditor.attest.vsa import (
    POLICY_URI,
    VSA_TYPE,
    folder_tree,
    policy_digest,
    policy_files,
    policy_set,
)
from auditor.errors import EXIT_POLICY, AuditError, InputError
from auditor.fsutil import sha256_file
from auditor.spec import Spec

STATEMENT_TYPES = ("https://in-toto.io/Statement/v1",)


class VerificationError(AuditError):
    """The attestation does not verify: exit 1 (a verdict, not a usage error)."""

    exit_code = EXIT_POLICY


@dataclass(frozen=True)
class Verified:
    file: Path
    keyid: str
    predicate_type: str
    subjects: tuple[str, ...]  # "name sha256:…" per subject
    checked: tuple[str, ...]  # what was checked beyond the signature, one line each
    statement: dict[str, Any]


def read_envelope(path: Path) -> dsse.Envelope:
    """The envelope in ``path``: a missing or unreadable file is exit 2, a garbled one exit 1."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(dsse.MAX_ENVELOPE_BYTES + 1)
    except FileNotFoundError:
        raise InputError(f"{path}: not found") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    if len(raw) > dsse.MAX_ENVELOPE_BYTES:
        raise VerificationError(f"{path}: larger than {dsse.MAX_ENVELOPE_BYTES} bytes; not an "
                                "envelope auditor reads")
    try:
        return dsse.decode(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise VerificationError(f"{path}: not UTF-8 text: not a DSSE envelope (garbled)") from None
    except dsse.EnvelopeError as exc:
        raise VerificationError(f"{path}: not a well-formed DSSE envelope: {exc}") from None


def check_signature(path: Path, env: dsse.Envelope, key: VerifyingKey) -> None:
    if env.verified_by(key):
        return
    ids = sorted({s.keyid for s in env.signatures if s.keyid})
    if ids and key.keyid not in ids:
        raise VerificationError(
            f"{path}: signed by key id {', '.join(ids)}, not by the given key ({key.keyid}): "
            "wrong key, or a signature replaced")
    if not ids:
        raise VerificationError(
            f"{path}: the signature does not verify with key {key.keyid} (the envelope names no "
            "key id): another key signed it, or the payload was changed after signing (forged)")
    raise VerificationError(
        f"{path}: the signature does not verify with key {key.keyid}: the payload or its type "
        "was changed after signing (forged), or the signature was damaged")


def _statement(path: Path, env: dsse.Envelope) -> dict[str, Any]:
    if env.payload_type != dsse.PAYLOAD_TYPE:
        raise VerificationError(f"{path}: payload type {env.payload_type!r}, expected "
                                f"{dsse.PAYLOAD_TYPE!r}")
    try:
        doc = json.loads(env.payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise VerificationError(f"{path}: the signed payload is not JSON") from None
    if not isinstance(doc, dict) or doc.get("_type") not in STATEMENT_TYPES:
        raise VerificationError(f"{path}: the signed payload is not an in-toto Statement v1")
    subjects = doc.get("subject")
    if not isinstance(subjects, list) or not subjects or not all(
            isinstance(s, dict) and isinstance(s.get("digest"), dict) for s in subjects):
        raise VerificationError(f"{path}: the statement has no subject with a digest")
    if not isinstance(doc.get("predicateType"), str):
        raise VerificationError(f"{path}: the statement has no predicateType")
    return doc


def subject_digest(target: Path) -> tuple[str, str]:
    """(algorithm, digest) of ``--subject``: a file's sha256, a folder's git tree hash."""
    if target.is_dir():
        return "gitTree", folder_tree(target)
    try:
        return "sha256", sha256_file(target)
    except FileNotFoundError:
        raise InputError(f"--subject {target}: not found") from None
    except OSError as exc:
        raise InputError(f"--subject {target}: cannot be read: {exc.strerror or exc}") from None


def check_subject(path: Path, doc: dict[str, Any], target: Path, what: str) -> str:
    algorithm, digest = subject_digest(target)
    have = [str(s["digest"].get(algorithm)) for s in doc["subject"] if algorithm in s["digest"]]
    if not have:
        raise VerificationError(f"{path}: no subject has a {algorithm} digest to compare with "
                                f"{what} {target}")
    if digest not in have:
        raise VerificationError(
            f"{path}: {what} {target} has {algorithm} {digest}, but the statement is about "
            f"{', '.join(have)}: a different (swapped) subject")
    return f"subject {algorithm} {digest} matches {what} {target.name}"


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def check_policy(path: Path, doc: dict[str, Any], spec: Spec) -> str:
    policy = _obj(_obj(doc.get("predicate")).get("policy"))
    digest = _obj(policy.get("digest"))
    if policy.get("uri") != POLICY_URI or not isinstance(digest.get("sha256"), str):
        raise VerificationError(f"{path}: the summary's policy is not an auditor policy set "
                                f"({POLICY_URI} with a sha256)")
    files = policy_files(spec)
    now = policy_digest(files)
    if digest["sha256"] != now:
        listing = "; ".join(f"{f.role} {f.path} sha256 {f.sha256}" for f in files)
        raise VerificationError(
            f"{path}: the policy it was judged by (sha256 {digest['sha256']}) is not the one "
            f"the spec {spec.path.name} names now (sha256 {now}: {listing}): a policy, waivers "
            "or profile file changed, or the spec names others")
    return f"policy digest {now} matches {', '.join(f.path for f in files)}"


def verify_file(path: Path, key: VerifyingKey, *, subject: Path | None = None,
                spec: Spec | None = None) -> Verified:
    env = read_envelope(path)
    check_signature(path, env, key)
    doc = _statement(path, env)
    checked: list[str] = []
    if subject is not None:
        checked.append(check_subject(path, doc, subject, "--subject"))
    if spec is not None:
        if doc["predicateType"] != VSA_TYPE:
            raise VerificationError(f"{path}: --spec checks a verification summary, but this "
                                    f"statement is {doc['predicateType']}")
        checked.append(check_policy(path, doc, spec))
        if subject is None:
            checked.append(check_subject(path, doc, spec.bundle.path, "the spec's bundle"))
    names = tuple(f"{s.get('name', '?')} " + ", ".join(f"{k}:{v}" for k, v in
                                                       sorted(s["digest"].items()))
                  for s in doc["subject"])
    return Verified(path, key.keyid, str(doc["predicateType"]), names, tuple(checked), doc)


__all__ = ["VerificationError", "Verified", "policy_set", "read_envelope", "verify_file"]
